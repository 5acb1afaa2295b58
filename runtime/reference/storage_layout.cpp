// Permutations between logical (row-major) order and a layout's storage order.
#include "runtime/reference/storage_layout.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace dnnc::runtime::reference {
namespace {

// Storage dim i holds logical dim perm[i].
std::vector<size_t> storage_perm(size_t rank, ir::Layout layout) {
  if (layout == ir::Layout::nhwc) {
    if (rank != 4) throw std::runtime_error(fmt::format("layout nhwc needs rank 4, found rank {}", rank));
    return {0, 2, 3, 1};
  }
  if (layout == ir::Layout::col_major) {
    if (rank != 2) throw std::runtime_error(fmt::format("layout col_major needs rank 2, found rank {}", rank));
    return {1, 0};
  }
  std::vector<size_t> id(rank);
  for (size_t i = 0; i < rank; ++i) id[i] = i;
  return id;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// out[storage index] = in[logical index] (to_storage) or the reverse (from_storage).
Tensor permute(const Tensor& in, const std::vector<int64_t>& logical, ir::Layout layout, bool to) {
  std::vector<size_t> perm = storage_perm(logical.size(), layout);
  std::vector<int64_t> stored(logical.size());
  for (size_t i = 0; i < perm.size(); ++i) stored[i] = logical[perm[i]];
  Tensor out(in.dtype(), to ? stored : logical);
  std::vector<int64_t> ls = strides_of(logical), ss = strides_of(stored);
  size_t es = in.elem_size();
  const auto* src = static_cast<const unsigned char*>(in.data());
  auto* dst = static_cast<unsigned char*>(out.data());
  for (int64_t s = 0; s < in.numel(); ++s) {  // s walks storage order
    int64_t rem = s, l = 0;
    for (size_t d = 0; d < stored.size(); ++d) {
      int64_t coord = rem / ss[d];
      rem -= coord * ss[d];
      l += coord * ls[perm[d]];
    }
    int64_t from = to ? l : s, into = to ? s : l;
    std::memcpy(dst + static_cast<size_t>(into) * es, src + static_cast<size_t>(from) * es, es);
  }
  return out;
}

}  // namespace

std::vector<int64_t> storage_shape(const std::vector<int64_t>& logical, ir::Layout layout) {
  std::vector<size_t> perm = storage_perm(logical.size(), layout);
  std::vector<int64_t> stored(logical.size());
  for (size_t i = 0; i < perm.size(); ++i) stored[i] = logical[perm[i]];
  return stored;
}

Tensor to_storage(const Tensor& logical, ir::Layout layout) {
  if (layout == ir::Layout::row_major) return logical;
  return permute(logical, logical.shape(), layout, true);
}

Tensor from_storage(const Tensor& stored, ir::Layout layout) {
  if (layout == ir::Layout::row_major) return stored;
  // Invert storage_perm to get the logical shape back.
  std::vector<size_t> perm = storage_perm(stored.rank(), layout);
  std::vector<int64_t> logical(stored.rank());
  for (size_t i = 0; i < perm.size(); ++i) logical[perm[i]] = stored.dim(i);
  return permute(stored, logical, layout, false);
}

}  // namespace dnnc::runtime::reference
