// The CPU JIT: compiles a generated C++ translation unit with the system compiler into a shared
// object, keeps it in an on-disk cache keyed by (source, flags, compiler version, CPU) and
// dlopens it. Writes are atomic; a corrupt entry is detected and rebuilt. A source holding the
// line `#define DNNC_PARTS n` (n > 1; codegen/cpp/cpp_printer.h) is compiled as n parts at once,
// part i with -DDNNC_PART=i -c, and the objects linked into the one library.
#pragma once
#include <atomic>
#include <string>
#include <vector>

namespace dnnc::runtime::cpu {

struct JitOptions {
  std::string cache_dir;  // empty: default_cache_dir()
  std::string compiler = "c++";
  std::vector<std::string> flags = {"-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp", "-shared", "-fPIC"};
  std::vector<std::string> libs = {"-lopenblas"};
};

/// $DNNC_CACHE_DIR if set and non-empty, else $HOME/.cache/dnnc, else /tmp/dnnc-cache.
std::string default_cache_dir();

/// The number of parts `source` is compiled as: n from its first `#define DNNC_PARTS n` line
/// (1 <= n <= 64), else 1.
int unit_parts(const std::string& source);

/// A loaded shared object. The handle is never closed: it was opened with RTLD_NODELETE
/// (unloading a library that started OpenMP threads crashes libgomp).
struct JitLibrary {
  void* handle = nullptr;
  std::string key;       // the cache key (also the library's exported `dnnc_key`)
  std::string so_path;   // <cache>/<key>.so
  std::string cpp_path;  // <cache>/<key>.cpp, the source it was built from
  /// The address of exported symbol `name`. Throws std::runtime_error naming the symbol and
  /// the library if it is missing.
  void* symbol(const std::string& name) const;
};

class JitCache {
 public:
  explicit JitCache(JitOptions options = {});

  /// Returns the library built from `source` (a translation unit without `dnnc_key`; this
  /// appends it). Compiles only if the cache has no valid entry; an entry whose recorded size or
  /// hash does not match its .so, that dlopen rejects or whose `dnnc_key` differs is deleted and
  /// rebuilt. `label` names the source in messages. Throws std::runtime_error if the cache
  /// directory cannot be created or written, if the compiler cannot be run, or if it fails: then
  /// the message holds the command, the compiler's output and the path of the generated .cpp.
  JitLibrary load(const std::string& source, const std::string& label);

  /// load() of each (source, label), the compilers of the sources the cache lacks running
  /// concurrently, up to `jobs` at a time (0: one per core). Returns the libraries in order;
  /// throws the error of the first source that fails, after all have finished.
  std::vector<JitLibrary> load_all(const std::vector<std::pair<std::string, std::string>>& sources, unsigned jobs = 0);

  /// The cache key of `source` under this cache's flags, compiler and CPU (32 hex digits).
  std::string key(const std::string& source);
  const std::string& cache_dir() const { return dir_; }

  int compiles() const { return compiles_; }  // libraries built by this object
  int hits() const { return hits_; }          // valid entries found on disk
  int rebuilds() const { return rebuilds_; }  // corrupt entries found and rebuilt

 private:
  std::string compiler_identity();
  void compile(const std::string& source, const std::string& key, const std::string& label);
  bool entry_valid(const std::string& key) const;

  JitOptions opt_;
  std::string dir_;
  std::string identity_;  // compiler version + CPU, computed once
  // Atomic: load_all runs load() on several threads.
  std::atomic<int> compiles_ = 0, hits_ = 0, rebuilds_ = 0;
  std::atomic<unsigned> temp_counter_ = 0;
};

/// 128-bit FNV-1a-style digest of `data` as 32 hex digits (not cryptographic; a cache key).
std::string digest_hex(const std::string& data);

}  // namespace dnnc::runtime::cpu
