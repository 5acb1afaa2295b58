// Reference kernels for flatten, reshape and transpose, and their table entries.
#include "runtime/reference/kernels_shape.h"

#include "runtime/reference/kernel_table.h"
#include "runtime/reference/kernels_reduce.h"

namespace dnnc::runtime::reference {

Shape flatten_shape(const Shape& x, int64_t start_dim, int64_t end_dim) {
  if (x.empty()) return Shape{1};  // torch.flatten of a scalar is [1]
  int64_t s = normalize_axis("flatten", start_dim, x.size());
  int64_t e = normalize_axis("flatten", end_dim, x.size());
  if (s > e) kernel_error("flatten", "start_dim " + std::to_string(start_dim) + " comes after end_dim " + std::to_string(end_dim));
  Shape out(x.begin(), x.begin() + s);
  int64_t n = 1;
  for (int64_t i = s; i <= e; ++i) n *= x[static_cast<size_t>(i)];
  out.push_back(n);
  out.insert(out.end(), x.begin() + e + 1, x.end());
  return out;
}

Shape reshape_shape(const Shape& x, const std::vector<int64_t>& shape) {
  Shape out(shape.begin(), shape.end());
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer_at >= 0) kernel_error("reshape", "shape " + shape_str(shape) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      kernel_error("reshape", "shape " + shape_str(shape) + " has a negative dimension");
    } else {
      known *= out[i];
    }
  }
  int64_t n = shape_numel(x);
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      kernel_error("reshape", "cannot reshape " + shape_str(x) + " into " + shape_str(shape));
    out[static_cast<size_t>(infer_at)] = n / known;
  }
  if (shape_numel(out) != n) kernel_error("reshape", "cannot reshape " + shape_str(x) + " into " + shape_str(shape));
  return out;
}

template <class T>
Buf<T> flatten_forward(const Buf<T>& x, int64_t start_dim, int64_t end_dim) {
  return Buf<T>(flatten_shape(x.shape, start_dim, end_dim), x.data);
}

template <class T>
Buf<T> reshape_forward(const Buf<T>& x, const std::vector<int64_t>& shape) {
  return Buf<T>(reshape_shape(x.shape, shape), x.data);
}

template <class T>
Buf<T> transpose_forward(const Buf<T>& x, const std::vector<int64_t>& perm) {
  size_t r = x.rank();
  std::vector<bool> seen(r, false);
  bool ok = perm.size() == r;
  for (int64_t p : perm) {
    if (!ok || p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)]) {
      ok = false;
      break;
    }
    seen[static_cast<size_t>(p)] = true;
  }
  if (!ok) kernel_error("transpose", "perm " + shape_str(perm) + " is not a permutation for rank " + std::to_string(r));
  Shape out_shape(r);
  for (size_t i = 0; i < r; ++i) out_shape[i] = x.shape[static_cast<size_t>(perm[i])];
  Shape xs = row_major_strides(x.shape), os = row_major_strides(out_shape);
  Buf<T> out(out_shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rem = i, src = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t coord = rem / os[d];
      rem -= coord * os[d];
      src += coord * xs[static_cast<size_t>(perm[d])];
    }
    out[i] = x[src];
  }
  return out;
}

#define DNNC_INSTANTIATE(T)                                                    \
  template Buf<T> flatten_forward(const Buf<T>&, int64_t, int64_t);            \
  template Buf<T> reshape_forward(const Buf<T>&, const std::vector<int64_t>&); \
  template Buf<T> transpose_forward(const Buf<T>&, const std::vector<int64_t>&);
DNNC_INSTANTIATE(float)
DNNC_INSTANTIATE(double)
DNNC_INSTANTIATE(int64_t)
#undef DNNC_INSTANTIATE

namespace {

int64_t norm_axis(const char* op, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) kernel_error(op, "axis " + std::to_string(axis) + " is out of range");
  return axis < 0 ? axis + r : axis;
}

// (outer, inner): the element counts before and after `axis`.
std::pair<int64_t, int64_t> around(const Shape& s, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  return {outer, inner};
}

}  // namespace

template <class T>
Buf<T> concat_forward(const std::vector<Buf<T>>& xs, int64_t axis) {
  if (xs.size() < 2) kernel_error("concat", "needs at least 2 operands");
  axis = norm_axis("concat", axis, xs[0].rank());
  Shape out = xs[0].shape;
  out[static_cast<size_t>(axis)] = 0;
  for (const Buf<T>& x : xs) {
    Shape s = x.shape;
    if (s.size() != out.size()) kernel_error("concat", "operands of different ranks");
    s[static_cast<size_t>(axis)] = 0;
    Shape o = out;
    o[static_cast<size_t>(axis)] = 0;
    if (s != o) kernel_error("concat", "operands " + shape_str(xs[0].shape) + " and " + shape_str(x.shape) +
                                           " differ off the concat axis");
    out[static_cast<size_t>(axis)] += x.dim(static_cast<size_t>(axis));
  }
  Buf<T> r(out);
  auto [outer, inner] = around(out, axis);
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Buf<T>& x : xs) {
      int64_t n = x.dim(static_cast<size_t>(axis)) * inner;
      for (int64_t i = 0; i < n; ++i) r[at++] = x[o * n + i];
    }
  return r;
}

template <class T>
Buf<T> slice_forward(const Buf<T>& x, int64_t axis, int64_t start, int64_t length) {
  axis = norm_axis("slice", axis, x.rank());
  int64_t n = x.dim(static_cast<size_t>(axis));
  if (start < 0 || length < 1 || start + length > n)
    kernel_error("slice", "[" + std::to_string(start) + ", " + std::to_string(start + length) +
                              ") is not inside an axis of " + std::to_string(n));
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = length;
  Buf<T> r(out);
  auto [outer, inner] = around(x.shape, axis);
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < length * inner; ++i) r[at++] = x[(o * n + start) * inner + i];
  return r;
}

template Buf<float> concat_forward(const std::vector<Buf<float>>&, int64_t);
template Buf<double> concat_forward(const std::vector<Buf<double>>&, int64_t);
template Buf<float> slice_forward(const Buf<float>&, int64_t, int64_t, int64_t);
template Buf<double> slice_forward(const Buf<double>&, int64_t, int64_t, int64_t);

// ---- kernel table entries: dtype-agnostic (f32 activations or i64 labels) -------------------

void register_shape_kernels(KernelTable& t) {
  t["flatten"] = [](const KernelCall& c) {
    const Tensor& x = c.in(0);
    return std::vector<Tensor>{x.reshaped(
        flatten_shape(x.shape(), ir::attr_int(c.at(), "start_dim"), ir::attr_int(c.at(), "end_dim")))};
  };
  t["reshape"] = [](const KernelCall& c) {
    const Tensor& x = c.in(0);
    return std::vector<Tensor>{x.reshaped(reshape_shape(x.shape(), ir::attr_ints(c.at(), "shape")))};
  };
  t["concat"] = [](const KernelCall& c) {
    std::vector<Buf<float>> xs;
    for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(f32_operand(c, i));
    return one_output(concat_forward(xs, ir::attr_int(c.at(), "axis")));
  };
  t["slice"] = [](const KernelCall& c) {
    return one_output(slice_forward(f32_operand(c, 0), ir::attr_int(c.at(), "axis"), ir::attr_int(c.at(), "start"),
                                    ir::attr_int(c.at(), "length")));
  };
  t["transpose"] = [](const KernelCall& c) {
    const Tensor& x = c.in(0);
    const auto& perm = ir::attr_ints(c.at(), "perm");
    if (x.dtype() == ir::DType::i64) {
      Buf<int64_t> r = transpose_forward(i64_operand(c, 0), perm);
      return std::vector<Tensor>{Tensor::from_i64(r.shape, r.data)};
    }
    return one_output(transpose_forward(f32_operand(c, 0), perm));
  };
}

}  // namespace dnnc::runtime::reference
