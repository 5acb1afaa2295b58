// The on-disk cache of NVRTC output: one entry per (source, options, NVRTC version, target
// arch), like the cpu backend's JIT cache. An entry is <key>.cubin or <key>.ptx plus <key>.meta
// (size and digest of the image, written last); writes are atomic, a corrupt entry is rebuilt.
#pragma once
#include <string>
#include <vector>

#include "runtime/cuda/nvrtc_compile.h"

namespace dnnc::runtime::cuda {

struct CachedImage {
  std::vector<char> image;  // CUBIN, or PTX text (no NUL)
  bool cubin = false;
  std::string key;
  std::string log;  // NVRTC's log when compiled now; empty on a cache hit
  bool hit = false;
};

class KernelCache {
 public:
  /// `dir` empty: $DNNC_CACHE_DIR, else ~/.cache/dnnc (the cpu backend's default_cache_dir()).
  explicit KernelCache(std::string dir = "");

  /// The image of `source` for `arch` ("sm_90": CUBIN, "compute_90": PTX), compiled by NVRTC
  /// only if no valid entry exists. Throws std::runtime_error with NVRTC's log (nvrtc_compile)
  /// or naming the cache file that cannot be written.
  CachedImage load(const std::string& source, const std::string& label, const std::string& arch,
                   const std::vector<std::string>& options);

  /// The entry key (32 hex digits) of that compilation.
  std::string key(const std::string& source, const std::string& arch, const std::vector<std::string>& options) const;
  const std::string& dir() const { return dir_; }
  int compiles() const { return compiles_; }
  int hits() const { return hits_; }
  int rebuilds() const { return rebuilds_; }

 private:
  std::string dir_;
  std::string nvrtc_;  // NVRTC version
  int compiles_ = 0, hits_ = 0, rebuilds_ = 0;
};

}  // namespace dnnc::runtime::cuda
