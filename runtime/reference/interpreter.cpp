// The reference interpreter: binds inputs and params, runs each node's reference kernel in
// graph order, checks every result against the graph's types, then applies the updates.
// Each value is stored in its type's layout (nhwc, col_major: runtime/reference/storage_layout.h);
// the kernels read and write logical row-major order, so operands are read through the layout
// and results are stored into it.
#include "runtime/reference/interpreter.h"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

#include "ir/op_registry.h"
#include "runtime/reference/kernel_table.h"
#include "runtime/reference/storage_layout.h"

namespace dnnc::runtime::reference {

const Tensor* ParamStore::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

namespace {

// Per-run state: the graph, the bound batch size and every value computed so far.
class Run {
 public:
  Run(const ir::Module& m, const ir::Graph& g, const RefOptions& opts) : m_(m), g_(g), opts_(opts) {
    values_.resize(g.values.size());
  }

  [[noreturn]] void fail(const std::string& msg) const {
    throw std::runtime_error(
        fmt::format("run_reference({}{}{}): {}", m_.name, m_.name.empty() ? "" : ".", g_.name, msg));
  }

  // The concrete shape of `t` with the batch dim bound; fails if the batch is still unknown.
  Shape concrete(const ir::TensorType& t, const std::string& what) const {
    Shape s;
    for (ir::Dim d : t.shape) {
      if (d == ir::kBatch && !batch_) fail(what + " has the batch dim but no graph input carries it");
      s.push_back(d == ir::kBatch ? *batch_ : d);
    }
    return s;
  }

  std::string type_str(ir::DType dt, const Shape& s) const { return std::string(ir::dtype_name(dt)) + shape_str(s); }

  void check_layouts() const {
    for (const ir::Value& v : g_.values) {
      bool ok = v.type.layout == ir::Layout::row_major || (v.type.layout == ir::Layout::nhwc && v.type.rank() == 4) ||
                (v.type.layout == ir::Layout::col_major && v.type.rank() == 2);
      if (!ok)
        fail(fmt::format("value '{}' is {}: nhwc needs rank 4 and col_major rank 2", v.name,
                         ir::to_string(v.type, m_.batch_symbol)));
    }
  }

  // Stores a logical tensor in value `id`'s layout.
  void store(ir::ValueId id, const Tensor& logical) {
    values_[static_cast<size_t>(id)] = to_storage(logical, g_.value(id).type.layout);
  }

  void bind_inputs(const std::map<std::string, Tensor>& inputs) {
    std::string batch_from;
    for (ir::ValueId id : g_.inputs) {
      const ir::Value& v = g_.value(id);
      auto it = inputs.find(v.name);
      if (it == inputs.end())
        fail(fmt::format("input '{}' ({}) was not given", v.name, ir::to_string(v.type, m_.batch_symbol)));
      const Tensor& t = it->second;
      std::string want = ir::to_string(v.type, m_.batch_symbol);
      if (t.dtype() != v.type.dtype || static_cast<int64_t>(t.rank()) != v.type.rank())
        fail(fmt::format("input '{}': expected {}, found {}", v.name, want, describe(t)));
      for (size_t d = 0; d < t.rank(); ++d) {
        ir::Dim expect = v.type.shape[d];
        if (expect == ir::kBatch) {
          if (!batch_) {
            batch_ = t.dim(d);
            batch_from = v.name;
          } else if (t.dim(d) != *batch_) {
            fail(fmt::format("input '{}': batch size {} disagrees with input '{}' (batch {}): expected {}, found {}",
                             v.name, t.dim(d), batch_from, *batch_, type_str(v.type.dtype, concrete(v.type, v.name)),
                             describe(t)));
          }
        } else if (t.dim(d) != expect) {
          fail(fmt::format("input '{}': expected {}, found {}", v.name, want, describe(t)));
        }
      }
      store(id, t);
    }
  }

  void bind_params(const ParamStore& params) {
    for (size_t i = 0; i < g_.values.size(); ++i) {
      const ir::Value& v = g_.values[i];
      if (v.kind != ir::ValueKind::param) continue;
      const Tensor* t = params.find(v.name);
      if (!t) fail(fmt::format("param '{}' ({}) is not in the param store", v.name, ir::to_string(v.type)));
      Shape want = concrete(v.type, "param '" + v.name + "'");
      if (t->dtype() != v.type.dtype || t->shape() != want)
        fail(fmt::format("param '{}': expected {}, found {}", v.name, type_str(v.type.dtype, want), describe(*t)));
      store(static_cast<ir::ValueId>(i), *t);
    }
  }

  void run_node(const ir::Node& n) {
    std::string where = fmt::format(
        "node {} = {}", n.outputs.empty() ? std::string("(no output)") : "%" + g_.value(n.outputs[0]).name, n.op);
    const ir::OpDef* def = ir::find_op(n.op);
    if (!def) fail(where + ": unknown op");
    if (!has_reference_kernel(n.op)) fail(where + ": no reference kernel for this op");
    ir::Attrs attrs;
    try {
      attrs = ir::complete_attrs(*def, n.attrs);
    } catch (const std::exception& e) {
      fail(where + ": " + e.what());
    }
    KernelCall call;
    call.op = n.op;
    call.attrs = &attrs;
    call.fp64_accumulate = opts_.fp64_accumulate;
    std::vector<Tensor> operands;  // in logical order
    operands.reserve(n.inputs.size());
    for (ir::ValueId in : n.inputs) {
      const Tensor& t = values_.at(static_cast<size_t>(in));
      if (t.empty()) fail(fmt::format("{}: operand '{}' has not been computed yet", where, g_.value(in).name));
      operands.push_back(from_storage(t, g_.value(in).type.layout));
    }
    for (const Tensor& t : operands) call.inputs.push_back(&t);
    for (ir::ValueId out : n.outputs) call.output_shapes.push_back(concrete(g_.value(out).type, where));
    std::vector<Tensor> results;
    try {
      results = run_reference_kernel(call);
    } catch (const std::runtime_error& e) {
      fail(where + ": " + e.what());
    }
    if (results.size() != n.outputs.size())
      fail(
          fmt::format("{}: the kernel returned {} outputs, the graph has {}", where, results.size(), n.outputs.size()));
    for (size_t i = 0; i < results.size(); ++i) {
      const ir::Value& v = g_.value(n.outputs[i]);
      if (results[i].dtype() != v.type.dtype || results[i].shape() != call.output_shapes[i])
        fail(fmt::format("{}: output '{}' is {}, the graph says {}", where, v.name, describe(results[i]),
                         type_str(v.type.dtype, call.output_shapes[i])));
      store(n.outputs[i], results[i]);
    }
  }

  // Value `id` in logical order.
  Tensor value(ir::ValueId id) const {
    const Tensor& t = values_.at(static_cast<size_t>(id));
    if (t.empty()) fail(fmt::format("value '{}' is never computed", g_.value(id).name));
    return from_storage(t, g_.value(id).type.layout);
  }

  void export_trace(ValueTrace& trace, StorageTrace* storage) {
    for (size_t i = 0; i < values_.size(); ++i) {
      if (values_[i].empty()) continue;
      trace[g_.values[i].name] = from_storage(values_[i], g_.values[i].type.layout);
      if (storage) (*storage)[g_.values[i].name] = values_[i];
    }
  }

 private:
  const ir::Module& m_;
  const ir::Graph& g_;
  const RefOptions& opts_;
  std::optional<int64_t> batch_;
  std::vector<Tensor> values_;  // by ValueId; empty until computed
};

}  // namespace

std::vector<Tensor> run_reference(const ir::Module& m, const ir::Graph& g, const std::map<std::string, Tensor>& inputs,
                                  ParamStore& params, const RefOptions& opts, ValueTrace* trace) {
  Run run(m, g, opts);
  run.check_layouts();
  run.bind_inputs(inputs);
  run.bind_params(params);
  for (const ir::Node& n : g.nodes) run.run_node(n);

  std::vector<Tensor> outputs;
  for (ir::ValueId id : g.outputs) outputs.push_back(run.value(id));
  std::vector<std::pair<std::string, Tensor>> updated;
  for (const auto& [name, id] : g.updates) {
    Tensor v = run.value(id);
    const Tensor* old = params.find(name);
    if (old && (old->dtype() != v.dtype() || old->shape() != v.shape()))
      run.fail(fmt::format("update of param '{}' with '{}': expected {}, found {}", name, g.value(id).name,
                           describe(*old), describe(v)));
    updated.emplace_back(name, v);
  }
  if (trace) run.export_trace(*trace, opts.storage_trace);
  for (auto& [name, t] : updated) params.tensors[name] = std::move(t);
  return outputs;
}

}  // namespace dnnc::runtime::reference
