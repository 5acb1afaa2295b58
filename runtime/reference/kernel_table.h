// The reference kernel table: one entry per IR op name, each adapting runtime Tensors and the
// node's (completed) attributes to the templated kernels in kernels_*.h.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "runtime/reference/buf.h"
#include "runtime/tensor.h"

namespace dnnc::runtime::reference {

/// One invocation of a reference kernel: the operands (optional operands that are absent are
/// simply not there), the node's attributes with the registry's defaults filled in, and the
/// concrete output shapes the graph expects (batch bound), for ops whose result shape is not a
/// function of their operands (fill, reshape).
struct KernelCall {
  std::string op;
  std::vector<const Tensor*> inputs;
  const ir::Attrs* attrs = nullptr;
  std::vector<Shape> output_shapes;
  bool fp64_accumulate = true;

  size_t num_inputs() const { return inputs.size(); }
  const Tensor& in(size_t i) const;  // throws std::runtime_error if operand i is absent
  const ir::Attrs& at() const { return *attrs; }
};

using RefKernel = std::function<std::vector<Tensor>(const KernelCall&)>;
using KernelTable = std::map<std::string, RefKernel>;

/// Builds the table by calling every family's registration function below.
KernelTable build_reference_kernel_table();
/// The table, built once on first use.
const KernelTable& reference_kernels();
/// True if `op` has a reference kernel.
bool has_reference_kernel(const std::string& op);
/// Runs the kernel of `call.op`. Throws std::runtime_error if there is none, or whatever the
/// kernel throws (bad operand shapes, out-of-range labels) as std::runtime_error.
std::vector<Tensor> run_reference_kernel(const KernelCall& call);

// One registration function per kernel family (each defined in its kernels_<family>.cpp).
void register_elementwise_kernels(KernelTable& t);
void register_binary_kernels(KernelTable& t);
void register_reduce_kernels(KernelTable& t);
void register_nn_kernels(KernelTable& t);
void register_pool_kernels(KernelTable& t);
void register_norm_kernels(KernelTable& t);
void register_loss_kernels(KernelTable& t);
void register_optim_kernels(KernelTable& t);
void register_shape_kernels(KernelTable& t);

/// Calls `f.template operator()<A>()` with the accumulator type A chosen by `fp64`
/// (double if set, float otherwise); storage is always float in the interpreter.
template <class F>
decltype(auto) with_accumulator(bool fp64, F&& f) {
  if (fp64) return f.template operator()<double>();
  return f.template operator()<float>();
}

/// Operand i as Buf<float>; throws std::runtime_error unless it is present and f32.
Buf<float> f32_operand(const KernelCall& c, size_t i);
/// Operand i as class labels; throws std::runtime_error unless it is present and i64.
Buf<int64_t> i64_operand(const KernelCall& c, size_t i);
/// Operand i as a number (step counters); throws unless it is an f32 with one element.
double scalar_operand(const KernelCall& c, size_t i);
/// One f32 tensor from a kernel result.
inline std::vector<Tensor> one_output(const Buf<float>& b) { return {to_tensor(b)}; }

/// The two entries of a 2-int attribute (stride, padding, ...); throws if it has another length.
std::array<int64_t, 2> attr_pair(const std::string& op, const ir::Attrs& a, const std::string& key);

}  // namespace dnnc::runtime::reference
