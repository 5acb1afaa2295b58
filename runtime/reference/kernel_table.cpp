// The reference kernel table: built once from the per-family registration functions, plus
// the operand helpers the families share.
#include "runtime/reference/kernel_table.h"

namespace dnnc::runtime::reference {

void kernel_error(const std::string& op, const std::string& msg) {
  throw std::runtime_error("reference " + op + ": " + msg);
}

const Tensor& KernelCall::in(size_t i) const {
  if (i >= inputs.size() || !inputs[i])
    kernel_error(op, "operand " + std::to_string(i) + " is missing (" + std::to_string(inputs.size()) + " given)");
  return *inputs[i];
}

Buf<float> f32_operand(const KernelCall& c, size_t i) {
  const Tensor& t = c.in(i);
  if (t.dtype() != ir::DType::f32)
    kernel_error(c.op, "operand " + std::to_string(i) + " must be f32, found " + describe(t));
  return to_buf<float>(t);
}

Buf<int64_t> i64_operand(const KernelCall& c, size_t i) {
  const Tensor& t = c.in(i);
  if (t.dtype() != ir::DType::i64)
    kernel_error(c.op, "operand " + std::to_string(i) + " must be i64, found " + describe(t));
  return to_labels(t);
}

double scalar_operand(const KernelCall& c, size_t i) {
  const Tensor& t = c.in(i);
  if (t.dtype() != ir::DType::f32 || t.numel() != 1)
    kernel_error(c.op, "operand " + std::to_string(i) + " must be an f32 scalar, found " + describe(t));
  return static_cast<double>(t.f32()[0]);
}

std::array<int64_t, 2> attr_pair(const std::string& op, const ir::Attrs& a, const std::string& key) {
  const std::vector<int64_t>& v = ir::attr_ints(a, key);
  if (v.size() != 2) kernel_error(op, "attribute " + key + " must have 2 entries, found " + shape_str(v));
  return {v[0], v[1]};
}

KernelTable build_reference_kernel_table() {
  KernelTable t;
  register_elementwise_kernels(t);
  register_binary_kernels(t);
  register_reduce_kernels(t);
  register_nn_kernels(t);
  register_pool_kernels(t);
  register_norm_kernels(t);
  register_loss_kernels(t);
  register_optim_kernels(t);
  register_shape_kernels(t);
  return t;
}

const KernelTable& reference_kernels() {
  static const KernelTable table = build_reference_kernel_table();
  return table;
}

bool has_reference_kernel(const std::string& op) { return reference_kernels().count(op) != 0; }

std::vector<Tensor> run_reference_kernel(const KernelCall& call) {
  const KernelTable& t = reference_kernels();
  auto it = t.find(call.op);
  if (it == t.end()) kernel_error(call.op, "no reference kernel for this op");
  return it->second(call);
}

}  // namespace dnnc::runtime::reference
