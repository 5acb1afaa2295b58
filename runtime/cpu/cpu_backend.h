// The `cpu` backend: lowers a graph to a codegen::Program, prints it as C++, JIT-compiles it
// through the on-disk cache (jit_cache.h) and runs it on host buffers (OpenMP + OpenBLAS).
#pragma once
#include <memory>
#include <string>

#include "codegen/lower/lower.h"
#include "runtime/backend.h"
#include "runtime/cpu/jit_cache.h"

namespace dnnc::runtime::cpu {

struct CpuOptions {
  JitOptions jit;
  codegen::LowerOptions lower;
  int threads = 0;  // OpenMP threads per parallel region; 0: all hardware threads
  /// Checking mode (the test suite turns it on): the arena is filled with NaN (bytes 0xFF) before
  /// each run and every buffer's region as soon as its lifetime ends, so a value read after its
  /// region was handed to another (a wrong plan) or before it was written shows up as NaN in
  /// the results. Off by default: it costs a pass over every dead buffer per step.
  bool poison_arena = false;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(CpuOptions options = {});
  std::string name() const override { return "cpu"; }
  /// Lowers, prints, compiles (or finds in the cache) and loads graph `graph`. Throws
  /// std::runtime_error if the graph does not exist, cannot be lowered (naming the node), or
  /// the compiler fails (with its log and the generated source's path).
  std::unique_ptr<Executable> compile(const ir::Module& module, const std::string& graph, ParamStore& params,
                                      int64_t batch) override;
  /// Lowers and prints every request, then compiles the sources concurrently (JitCache::load_all).
  std::vector<std::unique_ptr<Executable>> compile_all(const ir::Module& module,
                                                       const std::vector<CompileRequest>& requests,
                                                       ParamStore& params) override;
  /// Prints, compiles and loads a program lower_graph made (and verified) for `params`: what
  /// compile() does after lowering. Throws std::runtime_error if the compiler fails.
  std::unique_ptr<Executable> compile_program(codegen::Program prog, ParamStore& params);
  JitCache& cache() { return cache_; }
  int threads() const { return threads_; }

 private:
  CpuOptions options_;
  JitCache cache_;
  int threads_;
};

/// Per-step profiling of an Executable made by a CpuBackend: its generated `dnnc_run` calls
/// `tick(-1)` on entry and `tick(i)` after step i of its Program (see `program_of`); null turns
/// it off (the default). The hook is per loaded library, so it applies to every executable of
/// the same source. Returns false (nothing set) if `exe` is not a cpu executable.
using TickFn = void (*)(int);
bool set_profiler(Executable& exe, TickFn tick);

/// The activation arena of a cpu Executable: its base and size (the plan's p.arena.bytes), or
/// {nullptr, -1} if `exe` is not a cpu executable. Every intermediate and scratch buffer of
/// program_of(exe) lives at base + Buffer::offset.
struct ArenaView {
  const std::byte* base = nullptr;
  int64_t bytes = -1;
};
ArenaView arena_of(const Executable& exe);
/// Where buffer `b` of program_of(exe) is bound in the last run (nullptr before one).
const void* buffer_address(const Executable& exe, int b);

/// The Program a cpu Executable runs (its steps and their IR comments), or nullptr if `exe` is
/// not a cpu executable.
const codegen::Program* program_of(const Executable& exe);

/// A cpu backend with default options (cache in default_cache_dir()).
std::unique_ptr<Backend> make_cpu_backend();

/// Empty if the cpu backend can run here, else why not (the C++ compiler is not on PATH).
std::string cpu_backend_unavailable_reason();

}  // namespace dnnc::runtime::cpu
