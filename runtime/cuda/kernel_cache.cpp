// The NVRTC output cache (kernel_cache.h).
#include "runtime/cuda/kernel_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/cpu/jit_cache.h"

namespace dnnc::runtime::cuda {

namespace fs = std::filesystem;

namespace {

bool read_file(const fs::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

void write_file(const fs::path& p, const std::string& data) {
  AtomicFile f(p.string());
  f.write(data.data(), data.size());
  f.commit();
}

std::string meta_of(const std::string& image) { return fmt::format("{} {}\n", image.size(), cpu::digest_hex(image)); }

}  // namespace

KernelCache::KernelCache(std::string dir) : dir_(dir.empty() ? cpu::default_cache_dir() : std::move(dir)) {
  nvrtc_ = nvrtc_version();
}

std::string KernelCache::key(const std::string& source, const std::string& arch,
                             const std::vector<std::string>& options) const {
  return cpu::digest_hex(
      fmt::format("dnnc-cuda-1\nnvrtc {}\narch {}\noptions {}\n{}", nvrtc_, arch, fmt::join(options, " "), source));
}

CachedImage KernelCache::load(const std::string& source, const std::string& label, const std::string& arch,
                              const std::vector<std::string>& options) {
  CachedImage out;
  out.key = key(source, arch, options);
  out.cubin = arch.rfind("sm_", 0) == 0;
  fs::path base = fs::path(dir_) / out.key;
  fs::path image_path = base.string() + (out.cubin ? ".cubin" : ".ptx");
  fs::path meta_path = base.string() + ".meta";
  std::string image, meta;
  bool had_entry = read_file(meta_path, meta);
  if (had_entry && read_file(image_path, image) && meta == meta_of(image)) {
    out.image.assign(image.begin(), image.end());
    out.hit = true;
    ++hits_;
    return out;
  }
  if (had_entry) ++rebuilds_;  // truncated, edited or half-written: compile again
  NvrtcOutput r = nvrtc_compile(source, label, arch, options);
  ++compiles_;
  out.image = std::move(r.image);
  out.log = std::move(r.log);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create kernel cache directory {}: {}", dir_, ec.message()));
  std::string data(out.image.begin(), out.image.end());
  write_file(base.string() + ".cu", source);  // for debugging and error messages
  write_file(image_path, data);
  write_file(meta_path, meta_of(data));  // last: marks the entry complete
  return out;
}

}  // namespace dnnc::runtime::cuda
