// Host tensor storage.
#include "runtime/tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "ir/check.h"

namespace dnnc::runtime {

void Tensor::Free::operator()(void* p) const noexcept { std::free(p); }

Tensor::Tensor(ir::DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  numel_ = 1;
  bool overflow = false;
  for (int64_t d : shape_) {
    DNNC_CHECK(d >= 0, "tensor dims must be concrete and non-negative");
    overflow |= d != 0 && numel_ > (INT64_MAX / 8) / d;
    if (!overflow) numel_ *= d;
  }
  if (overflow)
    throw OutOfMemory(fmt::format("out of memory: a tensor {} has more bytes than 64 bits can count", describe(*this)));
  size_t bytes = (nbytes() + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  void* p = std::aligned_alloc(64, bytes);
  if (!p) {
    int64_t avail = available_memory_bytes();
    throw OutOfMemory(fmt::format("out of memory: cannot allocate {} for a tensor {}{}", format_bytes(double(bytes)),
                                  describe(*this),
                                  avail >= 0 ? fmt::format(" ({} available)", format_bytes(double(avail))) : ""));
  }
  std::memset(p, 0, bytes);
  data_.reset(static_cast<std::byte*>(p));
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[u]);
}

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string key, unit;
    int64_t kib = -1;
    if (ls >> key >> kib >> unit && key == "MemAvailable:" && kib >= 0) return kib * 1024;
  }
  return -1;
}

Tensor::Tensor(const Tensor& o) : Tensor() { *this = o; }

Tensor& Tensor::operator=(const Tensor& o) {
  if (this == &o) return *this;
  if (o.empty()) {
    *this = Tensor();
    return *this;
  }
  Tensor t(o.dtype_, o.shape_);
  std::memcpy(t.data(), o.data(), o.nbytes());
  *this = std::move(t);
  return *this;
}

Tensor Tensor::from_f32(std::vector<int64_t> shape, const std::vector<float>& data) {
  Tensor t(ir::DType::f32, std::move(shape));
  DNNC_CHECK(static_cast<int64_t>(data.size()) == t.numel(), "tensor data has {} elements, its shape {}", data.size(),
             t.numel());
  std::memcpy(t.data(), data.data(), t.nbytes());
  return t;
}

Tensor Tensor::from_i64(std::vector<int64_t> shape, const std::vector<int64_t>& data) {
  Tensor t(ir::DType::i64, std::move(shape));
  DNNC_CHECK(static_cast<int64_t>(data.size()) == t.numel(), "tensor data has {} elements, its shape {}", data.size(),
             t.numel());
  std::memcpy(t.data(), data.data(), t.nbytes());
  return t;
}

Tensor Tensor::scalar(float v) { return from_f32({}, {v}); }

float* Tensor::f32() {
  DNNC_CHECK(dtype_ == ir::DType::f32, "f32 view of a {} tensor", ir::dtype_name(dtype_));
  return reinterpret_cast<float*>(data_.get());
}
const float* Tensor::f32() const {
  DNNC_CHECK(dtype_ == ir::DType::f32, "f32 view of a {} tensor", ir::dtype_name(dtype_));
  return reinterpret_cast<const float*>(data_.get());
}
int64_t* Tensor::i64() {
  DNNC_CHECK(dtype_ == ir::DType::i64, "i64 view of a {} tensor", ir::dtype_name(dtype_));
  return reinterpret_cast<int64_t*>(data_.get());
}
const int64_t* Tensor::i64() const {
  DNNC_CHECK(dtype_ == ir::DType::i64, "i64 view of a {} tensor", ir::dtype_name(dtype_));
  return reinterpret_cast<const int64_t*>(data_.get());
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  Tensor t(dtype_, std::move(shape));
  DNNC_CHECK(t.numel() == numel_, "reshape must keep the element count");
  std::memcpy(t.data(), data(), nbytes());
  return t;
}

std::string describe(const Tensor& t) {
  std::string s = ir::dtype_name(t.dtype());
  s += "[";
  for (size_t i = 0; i < t.rank(); ++i) s += (i ? "," : "") + std::to_string(t.dim(i));
  return s + "]";
}

double rel_error(const Tensor& a, const Tensor& b) {
  DNNC_CHECK(a.numel() == b.numel(), "rel_error of tensors of {} and {} elements", a.numel(), b.numel());
  double num = 0, den = 0;
  const float* x = a.f32();
  const float* y = b.f32();
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = static_cast<double>(x[i]) - y[i];
    num += d * d;
    den += static_cast<double>(y[i]) * y[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

}  // namespace dnnc::runtime
