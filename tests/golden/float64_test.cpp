// float64_checks (tests/golden/float64/, README.md "Float64 goldens") on the reference
// interpreter, the cpu backend and the cuda backend's kernels in the emulator (tests/cuda_emu).
// The cuda backend itself runs them in cuda_gpu_tests (tests/cuda/gpu_float64_test.cpp).
#include <memory>

#include "codegen/lower/lower.h"
#include "float64_checks.h"
#include "runtime/backend.h"
#include "runtime/cpu/cpu_backend.h"
#include "tests/cuda_emu/emu_program.h"

namespace dnnc::golden {
namespace {

using runtime::Tensor;

// One graph compiled for one backend: "reference", "cpu", or "emu" (the cuda backend's kernels
// run by the emulator, tests/cuda_emu: its sums as printed for the GPU; its stand-in for
// cuBLASLt's GEMMs accumulates in double, so it says nothing about cuBLASLt's own accuracy).

Runner make_runner(const std::string& backend, const ir::Module& m, const std::string& graph,
                   runtime::ParamStore& params, int64_t batch) {
  if (backend == "emu") {
    auto exe = std::make_shared<test::EmuProgram>(
        codegen::lower_graph(m, *m.graph(graph), batch, codegen::cuda_lower_options()), DNNC_EMU_CACHE_DIR);
    return [exe, &params](const std::map<std::string, Tensor>& in) { return exe->run(in, params); };
  }
  std::shared_ptr<runtime::Backend> b;
  if (backend == "reference") {
    b = runtime::make_reference_backend();
  } else {
    runtime::cpu::CpuOptions o;
    o.jit.cache_dir = DNNC_TEST_CACHE_DIR;
    o.poison_arena = true;
    b = std::make_shared<runtime::cpu::CpuBackend>(o);
  }
  std::shared_ptr<runtime::Executable> exe = b->compile(m, graph, params, batch);
  return [b, exe](const std::map<std::string, Tensor>& in) { return exe->run(in); };
}

[[maybe_unused]] const bool registered = [] {
  for (const char* b : {"reference", "cpu", "emu"})
    register_float64_tests(
        b, "[golden][float64]",
        [b](const ir::Module& m, const std::string& graph, runtime::ParamStore& params, int64_t batch) {
          return make_runner(b, m, graph, params, batch);
        },
        // The emulator runs the standalone cross_entropy kernel's sequential loop over 65,536
        // rows in minutes (training fuses it into softmax_xent, which the trajectory covers).
        [b](const std::string& name) { return std::string(b) == "emu" && name == "cross_entropy_10"; });
  return true;
}();

}  // namespace
}  // namespace dnnc::golden
