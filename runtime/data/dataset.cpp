// Dataset batches as tensors: torchvision's ToTensor + Normalize, bit for bit in f32.
#include "runtime/data/dataset.h"

#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "ir/check.h"

namespace dnnc::runtime {
namespace {

void check_index(const Dataset& ds, int64_t i) {
  if (i < 0 || i >= ds.n) throw std::invalid_argument(fmt::format("dataset index {} is outside [0, {})", i, ds.n));
}

double per_channel(const std::vector<double>& v, int64_t ch) { return v.size() == 1 ? v[0] : v[ch]; }

}  // namespace

Tensor to_tensor(const Dataset& ds, const std::vector<double>& mean, const std::vector<double>& std,
                 std::span<const int64_t> indices) {
  DNNC_CHECK(static_cast<int64_t>(ds.images.size()) == ds.n * ds.image_size(), "dataset images/n mismatch");
  auto fits = [&](const std::vector<double>& v) { return v.size() == 1 || static_cast<int64_t>(v.size()) == ds.c; };
  if (!fits(mean) || !fits(std))
    throw std::invalid_argument(fmt::format("normalize: data has {} channels but mean has {} values and std {}", ds.c,
                                            mean.size(), std.size()));
  // One lookup table per channel: the result depends only on the byte value.
  std::vector<std::array<float, 256>> lut(static_cast<size_t>(ds.c));
  for (int64_t ch = 0; ch < ds.c; ++ch) {
    const float m = static_cast<float>(per_channel(mean, ch));
    const float s = static_cast<float>(per_channel(std, ch));
    if (s == 0.0f) throw std::invalid_argument(fmt::format("normalize: std of channel {} is 0", ch));
    for (int x = 0; x < 256; ++x) {
      const float v = static_cast<float>(x) / 255.0f;  // ToTensor
      lut[ch][x] = (v - m) / s;                        // Normalize: sub_(mean).div_(std)
    }
  }
  const int64_t b = static_cast<int64_t>(indices.size());
  Tensor out(ir::DType::f32, {b, ds.c, ds.h, ds.w});
  float* dst = out.f32();
  const int64_t plane = ds.h * ds.w;
  for (int64_t k = 0; k < b; ++k) {
    check_index(ds, indices[k]);
    const uint8_t* src = ds.images.data() + indices[k] * ds.image_size();
    for (int64_t ch = 0; ch < ds.c; ++ch) {
      const float* table = lut[ch].data();
      for (int64_t p = 0; p < plane; ++p) *dst++ = table[*src++];
    }
  }
  return out;
}

Tensor labels_tensor(const Dataset& ds, std::span<const int64_t> indices) {
  Tensor out(ir::DType::i64, {static_cast<int64_t>(indices.size())});
  int64_t* dst = out.i64();
  for (int64_t idx : indices) {
    check_index(ds, idx);
    *dst++ = ds.labels[idx];
  }
  return out;
}

std::vector<int64_t> class_counts(const Dataset& ds) {
  std::vector<int64_t> counts(static_cast<size_t>(ds.num_classes), 0);
  for (int64_t l : ds.labels) {
    DNNC_CHECK(l >= 0 && l < ds.num_classes, "label out of range in a validated dataset");
    ++counts[l];
  }
  return counts;
}

}  // namespace dnnc::runtime
