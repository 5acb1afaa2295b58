// An in-memory image classification data set (uint8 pixels, NCHW) and its conversion to
// normalized f32 batches, exactly as torchvision's ToTensor() + Normalize(mean, std).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/tensor.h"

namespace dnnc::runtime {

struct Dataset {
  std::vector<uint8_t> images;  // n*c*h*w pixels, NCHW, row-major
  std::vector<int64_t> labels;  // n class indices in [0, num_classes)
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t num_classes = 10;

  int64_t image_size() const { return c * h * w; }
};

/// The images at `indices` as an f32 tensor [indices.size(), c, h, w] with
/// out = (float(x)/255 - float(mean[ch])) / float(std[ch]), each step rounded to f32 like
/// torchvision's ToTensor + Normalize. `mean` and `std` hold one value per channel, or a single
/// value used for every channel. Throws std::invalid_argument if their sizes do not fit the
/// channel count, if a std value is 0, or if an index is outside [0, n).
Tensor to_tensor(const Dataset& ds, const std::vector<double>& mean, const std::vector<double>& std,
                 std::span<const int64_t> indices);

/// The labels at `indices` as an i64 tensor [indices.size()].
/// Throws std::invalid_argument if an index is outside [0, n).
Tensor labels_tensor(const Dataset& ds, std::span<const int64_t> indices);

/// How many samples each class has (size num_classes). Asserts labels are in range.
std::vector<int64_t> class_counts(const Dataset& ds);

}  // namespace dnnc::runtime
