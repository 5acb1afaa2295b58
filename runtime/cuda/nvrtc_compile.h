// NVRTC in one call: CUDA C source -> CUBIN (or PTX) for one architecture, with the compiler's
// log, and ptxas's per-kernel register/spill report parsed. Needs no driver and no GPU, so the
// CPU-only tests use it as well as the cuda plugin.
#pragma once
#include <string>
#include <vector>

namespace dnnc::runtime::cuda {

struct NvrtcOutput {
  std::vector<char> image;  // CUBIN (cubin = true) or PTX text without the trailing NUL
  bool cubin = false;
  std::string log;     // NVRTC's program log (ptxas's -v report included when asked)
  double seconds = 0;  // wall time of nvrtcCompileProgram
};

/// Compiles `source` for `arch` ("sm_80", "sm_90", ...; "compute_80" gives PTX). `options` are
/// added to the defaults (--std=c++17, --include-path=<toolkit include>, -arch). Throws
/// std::runtime_error holding `label`, the options and NVRTC's full log if compilation fails,
/// and the NVRTC error string for any other NVRTC failure.
NvrtcOutput nvrtc_compile(const std::string& source, const std::string& label, const std::string& arch,
                          const std::vector<std::string>& options = {});

/// "major.minor" of the NVRTC library in use (part of the kernel cache key).
std::string nvrtc_version();

/// The architectures this NVRTC can target, e.g. {75, 80, 86, 89, 90, ...}.
std::vector<int> nvrtc_supported_archs();

/// One kernel's line of ptxas's `-v` report.
struct PtxasKernelStats {
  std::string kernel;
  int registers = -1;
  int spill_stores = 0, spill_loads = 0;  // bytes
  int stack_frame = 0;                    // bytes
  int shared = 0;                         // bytes of static shared memory
};

/// Parses ptxas's `-v` lines ("Compiling entry function 'k'", "N bytes stack frame, N bytes
/// spill stores, N bytes spill loads", "Used N registers, ... N bytes smem"). Kernels appear in
/// the order of the log; a kernel without a "Used" line keeps registers = -1.
std::vector<PtxasKernelStats> parse_ptxas_log(const std::string& log);

}  // namespace dnnc::runtime::cuda
