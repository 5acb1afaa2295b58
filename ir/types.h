// Tensor types of the IR: element type, shape with one symbolic batch dimension, layout.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dnnc::ir {

enum class DType : uint8_t { f32, i64 };

/// A dimension size. kBatch is the model's symbolic batch dimension (written `N`
/// or whatever name the model's inputs use); every other value is a concrete size >= 0.
using Dim = int64_t;
inline constexpr Dim kBatch = -1;

using Shape = std::vector<Dim>;

/// Physical layout of a tensor. `row_major` is PyTorch's contiguous layout (NCHW for
/// 4-d activations, [out, in] for linear weights); the others are chosen by select-layout.
enum class Layout : uint8_t { row_major, nhwc, col_major };

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  Layout layout = Layout::row_major;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool has_batch() const;
  /// Number of elements with the batch dimension bound to `batch`.
  /// Returns nullopt if the count overflows int64.
  std::optional<int64_t> numel(int64_t batch) const;
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

const char* dtype_name(DType t);                       // "f32"
std::optional<DType> parse_dtype(const std::string&);  // nullopt if unknown
const char* layout_name(Layout l);                     // "row_major"
std::optional<Layout> parse_layout(const std::string&);

/// "f32[N,512]" (batch symbol printed as `batch_symbol`; layout suffix only if not row_major,
/// e.g. "f32[N,30,30,16]{nhwc}").
std::string to_string(const TensorType& t, const std::string& batch_symbol = "N");
/// "[N,512]"
std::string shape_to_string(const Shape& s, const std::string& batch_symbol = "N");

}  // namespace dnnc::ir
