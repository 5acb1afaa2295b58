// A host tensor: dtype, concrete shape and a 64-byte aligned, owned buffer (value semantics).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/types.h"

namespace dnnc::runtime {

class Tensor {
 public:
  Tensor() = default;
  /// Zero-filled tensor. Asserts that every dim is >= 0 (callers validate user shapes first).
  /// Throws OutOfMemory if the storage cannot be allocated (or its size overflows).
  Tensor(ir::DType dtype, std::vector<int64_t> shape);
  Tensor(const Tensor& o);
  Tensor& operator=(const Tensor& o);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  static Tensor from_f32(std::vector<int64_t> shape, const std::vector<float>& data);
  static Tensor from_i64(std::vector<int64_t> shape, const std::vector<int64_t>& data);
  static Tensor scalar(float v);

  ir::DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t rank() const { return shape_.size(); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * elem_size(); }
  size_t elem_size() const { return dtype_ == ir::DType::i64 ? 8 : 4; }
  bool empty() const { return !data_; }

  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  float* f32();  // asserts dtype f32
  const float* f32() const;
  int64_t* i64();  // asserts dtype i64
  const int64_t* i64() const;

  /// Same data, new shape with the same element count (asserts).
  Tensor reshaped(std::vector<int64_t> shape) const;

 private:
  struct Free {
    void operator()(void* p) const noexcept;
  };
  ir::DType dtype_ = ir::DType::f32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::unique_ptr<std::byte, Free> data_;
};

/// "f32[128,784]"
std::string describe(const Tensor& t);

/// Thrown when a tensor's storage cannot be allocated; the message names the size and shape.
class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "512 B", "2.30 MiB", "3.73 TiB" (binary units).
std::string format_bytes(double bytes);

/// Memory this process may still use: MemAvailable of /proc/meminfo (bytes), or -1 if unknown.
int64_t available_memory_bytes();

/// ‖a−b‖₂/‖b‖₂ over f32 tensors of equal numel, computed in double. If ‖b‖ is 0, returns ‖a−b‖.
double rel_error(const Tensor& a, const Tensor& b);

}  // namespace dnnc::runtime
