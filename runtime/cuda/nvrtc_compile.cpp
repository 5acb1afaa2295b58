// NVRTC compilation and ptxas report parsing (nvrtc_compile.h).
#include "runtime/cuda/nvrtc_compile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvrtc.h>

#include <chrono>
#include <regex>
#include <stdexcept>

#ifndef DNNC_CUDA_INCLUDE_DIR
#define DNNC_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace dnnc::runtime::cuda {

namespace {

// Every NVRTC call goes through this: the call's text, file and line, and NVRTC's message.
void nvrtc_check(nvrtcResult r, const char* call, const char* file, int line) {
  if (r == NVRTC_SUCCESS) return;
  throw std::runtime_error(
      fmt::format("{}:{}: {} failed: {} ({})", file, line, call, nvrtcGetErrorString(r), static_cast<int>(r)));
}
#define DNNC_NVRTC(call) nvrtc_check((call), #call, __FILE__, __LINE__)

// Destroys the program on every path.
struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog) nvrtcDestroyProgram(&prog);
  }
};

}  // namespace

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& label, const std::string& arch,
                          const std::vector<std::string>& options) {
  ProgramGuard g;
  DNNC_NVRTC(nvrtcCreateProgram(&g.prog, source.c_str(), (label + ".cu").c_str(), 0, nullptr, nullptr));
  std::vector<std::string> opts = {"--std=c++17", std::string("--include-path=") + DNNC_CUDA_INCLUDE_DIR,
                                   "-arch=" + arch};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  auto t0 = std::chrono::steady_clock::now();
  nvrtcResult rc = nvrtcCompileProgram(g.prog, static_cast<int>(argv.size()), argv.data());
  NvrtcOutput out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t log_size = 0;
  DNNC_NVRTC(nvrtcGetProgramLogSize(g.prog, &log_size));
  std::string log(log_size, '\0');
  if (log_size) DNNC_NVRTC(nvrtcGetProgramLog(g.prog, log.data()));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  out.log = log;
  if (rc != NVRTC_SUCCESS)
    throw std::runtime_error(fmt::format("NVRTC failed to compile {} ({}; options: {}):\n{}", label,
                                         nvrtcGetErrorString(rc), fmt::join(opts, " "), log));
  out.cubin = arch.rfind("sm_", 0) == 0;
  size_t size = 0;
  if (out.cubin) {
    DNNC_NVRTC(nvrtcGetCUBINSize(g.prog, &size));
    out.image.resize(size);
    DNNC_NVRTC(nvrtcGetCUBIN(g.prog, out.image.data()));
  } else {
    DNNC_NVRTC(nvrtcGetPTXSize(g.prog, &size));
    out.image.resize(size);
    DNNC_NVRTC(nvrtcGetPTX(g.prog, out.image.data()));
    while (!out.image.empty() && out.image.back() == '\0') out.image.pop_back();  // the PTX size counts a NUL
  }
  return out;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  DNNC_NVRTC(nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::vector<int> nvrtc_supported_archs() {
  int n = 0;
  DNNC_NVRTC(nvrtcGetNumSupportedArchs(&n));
  std::vector<int> archs(static_cast<size_t>(n));
  if (n) DNNC_NVRTC(nvrtcGetSupportedArchs(archs.data()));
  return archs;
}

std::vector<PtxasKernelStats> parse_ptxas_log(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([A-Za-z_0-9]+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<PtxasKernelStats> out;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string line = log.substr(start, end - start);
    start = end + 1;
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      out.push_back({});
      out.back().kernel = m[1];
      continue;
    }
    if (out.empty()) continue;
    PtxasKernelStats& k = out.back();
    if (std::regex_search(line, m, frame)) {
      k.stack_frame = std::stoi(m[1]);
      k.spill_stores = std::stoi(m[2]);
      k.spill_loads = std::stoi(m[3]);
    }
    if (std::regex_search(line, m, used)) {
      k.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) k.shared = std::stoi(m[1]);
    }
  }
  return out;
}

}  // namespace dnnc::runtime::cuda
