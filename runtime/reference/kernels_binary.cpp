// Reference kernels for add/sub/mul/div with numpy broadcasting, and their table entries.
#include "runtime/reference/kernels_binary.h"

#include <algorithm>

#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

Shape broadcast_shape(const std::string& op, const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      kernel_error(op, "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

// Strides of `s` seen from the broadcast shape of rank `r`: 0 where `s` is broadcast.
Shape broadcast_strides(const Shape& s, size_t r) {
  Shape st(r, 0);
  Shape own = row_major_strides(s);
  size_t off = r - s.size();
  for (size_t i = 0; i < s.size(); ++i) st[off + i] = s[i] == 1 ? 0 : own[i];
  return st;
}

template <class T, class F>
Buf<T> broadcast_map(const char* op, const Buf<T>& a, const Buf<T>& b, F f) {
  Shape shape = broadcast_shape(op, a.shape, b.shape);
  Buf<T> out(shape);
  Shape sa = broadcast_strides(a.shape, shape.size());
  Shape sb = broadcast_strides(b.shape, shape.size());
  Shape so = row_major_strides(shape);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t rem = i, ia = 0, ib = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t coord = rem / so[d];
      rem -= coord * so[d];
      ia += coord * sa[d];
      ib += coord * sb[d];
    }
    out[i] = f(a[ia], b[ib]);
  }
  return out;
}

}  // namespace

template <class T>
Buf<T> add_forward(const Buf<T>& a, const Buf<T>& b) {
  return broadcast_map("add", a, b, [](T x, T y) { return x + y; });
}
template <class T>
Buf<T> sub_forward(const Buf<T>& a, const Buf<T>& b) {
  return broadcast_map("sub", a, b, [](T x, T y) { return x - y; });
}
template <class T>
Buf<T> mul_forward(const Buf<T>& a, const Buf<T>& b) {
  return broadcast_map("mul", a, b, [](T x, T y) { return x * y; });
}
template <class T>
Buf<T> div_forward(const Buf<T>& a, const Buf<T>& b) {
  return broadcast_map("div", a, b, [](T x, T y) { return x / y; });
}

#define DNNC_INSTANTIATE(T)                                       \
  template Buf<T> add_forward(const Buf<T>&, const Buf<T>&);      \
  template Buf<T> sub_forward(const Buf<T>&, const Buf<T>&);      \
  template Buf<T> mul_forward(const Buf<T>&, const Buf<T>&);      \
  template Buf<T> div_forward(const Buf<T>&, const Buf<T>&);
DNNC_INSTANTIATE(float)
DNNC_INSTANTIATE(double)
#undef DNNC_INSTANTIATE

void register_binary_kernels(KernelTable& t) {
  t["add"] = [](const KernelCall& c) { return one_output(add_forward(f32_operand(c, 0), f32_operand(c, 1))); };
  t["sub"] = [](const KernelCall& c) { return one_output(sub_forward(f32_operand(c, 0), f32_operand(c, 1))); };
  t["mul"] = [](const KernelCall& c) { return one_output(mul_forward(f32_operand(c, 0), f32_operand(c, 1))); };
  t["div"] = [](const KernelCall& c) { return one_output(div_forward(f32_operand(c, 0), f32_operand(c, 1))); };
}

}  // namespace dnnc::runtime::reference
