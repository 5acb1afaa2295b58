// The "ops" graph: small cases of every op family (shapes chosen to hit odd sizes, broadcasting,
// padding/stride/dilation/groups, both conv code paths, M=1 and N=1 GEMMs).
#include "ops_graph.h"

#include <cassert>

#include "ir/op_registry.h"
#include "ir/verifier.h"

namespace dnnc::test {

namespace {

using ir::Attrs;
using ir::ValueId;

class Builder {
 public:
  explicit Builder(OpsModule& om) : om_(om), g_(om.module.graphs.back()) {}

  ValueId in(const std::string& name, std::vector<ir::Dim> shape, ir::DType dt = ir::DType::f32) {
    return g_.add_input(name, ir::TensorType{dt, std::move(shape)});
  }

  ir::TensorType type_of(ValueId v) const { return g_.value(v).type; }

  /// Adds `op` to family `fam`; every result becomes a graph output. Returns the results.
  std::vector<ValueId> op(const std::string& fam, const std::string& op, const std::vector<ValueId>& ins,
                          const Attrs& attrs = {}) {
    const ir::OpDef* def = ir::find_op(op);
    assert(def && "unknown op in the ops graph");
    std::vector<ir::TensorType> types;
    for (ValueId v : ins) types.push_back(g_.value(v).type);
    Attrs full = ir::complete_attrs(*def, attrs);
    std::vector<ir::TensorType> outs = ir::infer_types(*def, types, full);
    std::vector<std::string> names;
    for (size_t i = 0; i < outs.size(); ++i) names.push_back(g_.fresh_name(fam + "." + op));
    std::vector<ValueId> res = g_.add_node(op, ins, full, outs, {}, names);
    for (ValueId r : res) {
      g_.outputs.push_back(r);
      om_.family[fam].push_back(g_.value(r).name);
    }
    return res;
  }

  /// An input shaped like `v` (e.g. an upstream gradient of a result).
  ValueId like(const std::string& name, ValueId v) { return in(name, type_of(v).shape); }

 private:
  OpsModule& om_;
  ir::Graph& g_;
};

void elementwise(Builder& b) {
  ValueId x = b.in("ew.x", {4, 33});
  for (const char* op : {"relu", "tanh", "sigmoid", "gelu", "neg"}) b.op("elementwise", op, {x});
  b.op("elementwise", "leaky_relu", {x}, {{"negative_slope", 0.2}});
  b.op("elementwise", "add_scalar", {x}, {{"value", 0.75}});
  b.op("elementwise", "mul_scalar", {x}, {{"value", -1.5}});
  b.op("elementwise", "div_scalar", {x}, {{"value", 3.0}});
  b.op("elementwise", "fill", {}, {{"value", 0.25}, {"shape", std::vector<int64_t>{3, 5}}});
  ValueId dy = b.in("ewb.dy", {4, 33});
  for (const char* op : {"relu_backward", "tanh_backward", "sigmoid_backward", "gelu_backward"})
    b.op("elementwise_backward", op, {dy, x});
  b.op("elementwise_backward", "leaky_relu_backward", {dy, x}, {{"negative_slope", 0.2}});
}

void broadcast(Builder& b) {
  struct Pair {
    std::vector<ir::Dim> a, c;
  };
  std::vector<Pair> pairs = {{{4, 3}, {4, 3}}, {{4, 3}, {3}},    {{4, 3}, {4, 1}},
                             {{4, 1}, {1, 3}}, {{2, 3, 5}, {5}}, {{3}, {2, 4, 3}}};
  int i = 0;
  for (const Pair& p : pairs) {
    ValueId a = b.in("bc" + std::to_string(i) + ".a", p.a);
    ValueId c = b.in("bc" + std::to_string(i) + ".c.pos", p.c);
    for (const char* op : {"add", "sub", "mul", "div"}) b.op("broadcast", op, {a, c});
    ++i;
  }
}

void dropout(Builder& b, ValueId step) {
  ValueId x = b.in("drop.x", {6, 50});
  b.op("dropout", "dropout", {x, step}, {{"p", 0.3}, {"seed", int64_t{5}}});
  b.op("dropout", "dropout", {x, step}, {{"p", 0.0}, {"seed", int64_t{1}}});
}

void shape_ops(Builder& b) {
  ValueId x = b.in("shape.x", {2, 3, 4, 5});
  ValueId f = b.op("shape", "flatten", {x})[0];
  b.op("shape", "relu", {f});  // a kernel reading the alias
  b.op("shape", "flatten", {x}, {{"start_dim", int64_t{1}}, {"end_dim", int64_t{2}}});
  b.op("shape", "reshape", {x}, {{"shape", std::vector<int64_t>{6, 20}}});
  ValueId t3 = b.in("shape.t3", {2, 3, 4});
  b.op("shape", "transpose", {t3}, {{"perm", std::vector<int64_t>{0, 2, 1}}});
  b.op("shape", "transpose", {t3}, {{"perm", std::vector<int64_t>{2, 0, 1}}});
  ValueId t2 = b.in("shape.t2", {5, 7});
  b.op("shape", "transpose", {t2}, {{"perm", std::vector<int64_t>{1, 0}}});
  ValueId lab = b.in("shape.labels", {3, 4}, ir::DType::i64);
  b.op("shape", "transpose", {lab}, {{"perm", std::vector<int64_t>{1, 0}}});
  // concat along channels and the last axis, and slices (its gradient).
  ValueId c0 = b.in("shape.c0", {2, 3, 4}), c1 = b.in("shape.c1", {2, 2, 4}), c2 = b.in("shape.c2", {2, 3, 1});
  b.op("shape", "concat", {c0, c1, c0}, {{"axis", 1}});
  b.op("shape", "concat", {c0, c2}, {{"axis", -1}});
  b.op("shape", "slice", {c0}, {{"axis", 1}, {"start", 1}, {"length", 2}});
  b.op("shape", "slice", {c0}, {{"axis", 2}, {"start", 3}, {"length", 1}});
  b.op("elementwise", "increment", {lab});
  b.op("elementwise", "increment", {b.in("ew.counter", {}, ir::DType::i64)});
}

void reduce(Builder& b) {
  ValueId x = b.in("red.x", {2, 3, 4, 5});
  using V = std::vector<int64_t>;
  for (const V& axes : {V{0}, V{1}, V{3}, V{0, 2, 3}, V{1, 2}, V{0, 1, 2, 3}, V{-1}})
    b.op("reduce", "reduce_sum", {x}, {{"axes", axes}});
  b.op("reduce", "reduce_sum", {x}, {{"axes", V{1, 2}}, {"keepdim", true}});
  ValueId s = b.in("sm.x", {3, 4, 5});
  ValueId dy = b.in("sm.dy", {3, 4, 5});
  for (int64_t axis : {int64_t{-1}, int64_t{1}, int64_t{0}}) {
    ValueId y = b.op("softmax", "softmax", {s}, {{"axis", axis}})[0];
    ValueId ly = b.op("softmax", "log_softmax", {s}, {{"axis", axis}})[0];
    b.op("softmax", "softmax_backward", {dy, y}, {{"axis", axis}});
    b.op("softmax", "log_softmax_backward", {dy, ly}, {{"axis", axis}});
  }
}

void losses(Builder& b) {
  ValueId logits = b.in("ce.logits", {8, 10});
  ValueId target = b.in("ce.target", {8}, ir::DType::i64);
  ValueId dloss = b.in("ce.dloss.pos", {});
  b.op("loss", "cross_entropy", {logits, target});
  b.op("loss", "cross_entropy_backward", {dloss, logits, target});
  b.op("loss", "cross_entropy", {logits, target}, {{"label_smoothing", 0.1}});
  b.op("loss", "cross_entropy_backward", {dloss, logits, target}, {{"label_smoothing", 0.1}});
  ValueId pred = b.in("mse.pred", {4, 6}), tgt = b.in("mse.target", {4, 6});
  b.op("loss", "mse_loss", {pred, tgt});
  b.op("loss", "mse_loss_backward", {dloss, pred, tgt});
}

void gemm(Builder& b) {
  ValueId w = b.in("lin.w", {3, 7}), bias = b.in("lin.b", {3});
  b.op("gemm", "linear", {b.in("lin.x", {5, 7}), w, bias});
  b.op("gemm", "linear", {b.in("lin.x3", {2, 3, 7}), w, bias});
  b.op("gemm", "linear", {b.in("lin.xn", {5, 7}), w});
  b.op("gemm", "linear", {b.in("lin.x1", {1, 7}), w, bias});                                      // M = 1: gemv
  b.op("gemm", "linear", {b.in("lin.xb", {5, 7}), b.in("lin.w1", {1, 7}), b.in("lin.b1", {1})});  // N = 1
  b.op("gemm", "linear", {b.in("lin.xl", {37, 300}), b.in("lin.wl", {53, 300}), b.in("lin.bl", {53})});  // own sgemm, β = 1
  b.op("gemm", "linear", {b.in("lin.xd", {13, 200}), b.in("lin.wd", {29, 200}), b.in("lin.bd", {29})});  // dot kernel, β = 1
  struct Case {
    std::vector<ir::Dim> a, c;
    bool ta, tb;
  };
  std::vector<Case> cases = {{{4, 6}, {6, 5}, false, false}, {{4, 6}, {5, 6}, false, true},
                             {{6, 4}, {6, 5}, true, false},  {{6, 4}, {5, 6}, true, true},
                             {{1, 6}, {6, 5}, false, false}, {{6, 1}, {5, 6}, true, true},
                             {{4, 6}, {6, 1}, false, false}, {{6, 4}, {1, 6}, true, true},
                             // Large enough for the cpu backend's own AVX-512 sgemm: partial 8-row and
                             // 48-column tiles, two K blocks (k = 300), and (last) several row and
                             // column blocks (m = 100 > 96, n = 1600 > 1536).
                             {{37, 300}, {300, 53}, false, false}, {{37, 300}, {53, 300}, false, true},
                             {{300, 37}, {300, 53}, true, false},  {{300, 37}, {53, 300}, true, true},
                             {{100, 20}, {20, 1600}, false, false},
                             // A·Bᵀ with a small C and a long k: the dot-product kernel, with partial
                             // 4-row and 6-column tiles and a k tail (k % 16 = 12), and (last) k in
                             // three blocks of 700.
                             {{13, 300}, {29, 300}, false, true}, {{7, 2100}, {11, 2100}, false, true},
                             // Aᵀ·B with a short k and a large C: the own sgemm with AVX2 only, with
                             // partial 6-row and 16-column tiles and two row blocks (m = 100 > 96),
                             // and (last) several column blocks (n = 1600 > 1536).
                             {{40, 100}, {40, 200}, true, false}, {{9, 97}, {9, 1600}, true, false}};
  int i = 0;
  for (const Case& c : cases) {
    std::string p = "mm" + std::to_string(i++);
    b.op("gemm", "matmul", {b.in(p + ".a", c.a), b.in(p + ".b", c.c)}, {{"transpose_a", c.ta}, {"transpose_b", c.tb}});
  }
}

struct ConvCase {
  std::vector<ir::Dim> x, w;
  int64_t stride, pad, dil, groups;
  bool bias;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{2, 3, 9, 9}, {4, 3, 3, 3}, 1, 0, 1, 1, true},  // 27 taps: direct loops by default
      {{2, 3, 9, 9}, {4, 3, 3, 3}, 2, 1, 1, 1, true},    {{2, 3, 9, 9}, {4, 3, 3, 3}, 1, 2, 2, 1, false},
      {{2, 4, 7, 7}, {6, 2, 3, 3}, 1, 1, 1, 2, true},     // grouped
      {{2, 3, 11, 10}, {4, 3, 3, 2}, 2, 0, 2, 1, false},  // unpadded, strided, dilated: register accumulation
      {{2, 4, 7, 7}, {6, 2, 3, 3}, 1, 0, 1, 2, true},     // unpadded, grouped
      {{2, 8, 7, 7}, {5, 8, 3, 3}, 1, 1, 1, 1, true},     // 72 taps: im2col + GEMM by default
      {{3, 8, 8, 6}, {5, 8, 3, 2}, 2, 1, 1, 1, false},    // non-square kernel
  };
  return cases;
}

ir::Attrs conv_attrs(const ConvCase& c) {
  return {{"stride", std::vector<int64_t>{c.stride, c.stride}},
          {"padding", std::vector<int64_t>{c.pad, c.pad}},
          {"dilation", std::vector<int64_t>{c.dil, c.dil}},
          {"groups", c.groups}};
}

void conv(Builder& b) {
  int i = 0;
  for (const ConvCase& c : conv_cases()) {
    std::string p = "conv" + std::to_string(i++);
    ValueId x = b.in(p + ".x", c.x), w = b.in(p + ".w", c.w);
    std::vector<ValueId> ins{x, w};
    if (c.bias) ins.push_back(b.in(p + ".b", {c.w[0]}));
    ValueId y = b.op("conv", "conv2d", ins, conv_attrs(c))[0];
    ValueId dy = b.like(p + ".dy", y);
    ir::Attrs bi = conv_attrs(c);
    bi["input_hw"] = std::vector<int64_t>{c.x[2], c.x[3]};
    b.op("conv_backward", "conv2d_backward_input", {dy, w}, bi);
    ir::Attrs bw = conv_attrs(c);
    bw["kernel"] = std::vector<int64_t>{c.w[2], c.w[3]};
    b.op("conv_backward", "conv2d_backward_weight", {dy, x}, bw);
  }
}

void pool(Builder& b) {
  using V = std::vector<int64_t>;
  struct Case {
    std::vector<ir::Dim> x;
    V k, s, p;
    bool include_pad;
  };
  std::vector<Case> cases = {{{2, 3, 8, 8}, {2, 2}, {}, {0, 0}, true},
                             {{2, 3, 7, 7}, {2, 2}, {}, {0, 0}, true},
                             {{2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, true},
                             {{2, 3, 9, 8}, {3, 3}, {2, 2}, {1, 1}, false},
                             {{1, 2, 6, 9}, {2, 3}, {1, 2}, {1, 1}, false}};
  int i = 0;
  for (const Case& c : cases) {
    std::string p = "pool" + std::to_string(i++);
    ValueId x = b.in(p + ".x", c.x);
    ir::Attrs a{{"kernel", c.k}, {"stride", c.s}, {"padding", c.p}};
    ValueId y = b.op("pool", "maxpool2d", {x}, a)[0];
    b.op("pool", "maxpool2d_backward", {b.like(p + ".dy", y), x}, a);
    a["count_include_pad"] = c.include_pad;
    ValueId ay = b.op("pool", "avgpool2d", {x}, a)[0];
    b.op("pool", "avgpool2d_backward", {b.like(p + ".ady", ay), x}, a);
  }
}

void norms(Builder& b) {
  ValueId x = b.in("bn.x", {3, 4, 5, 5});
  ValueId w = b.in("bn.w", {4}), bias = b.in("bn.b", {4}), rm = b.in("bn.rm", {4}), rv = b.in("bn.rv.pos", {4});
  b.op("norm", "batchnorm2d", {x, w, bias, rm, rv}, {{"momentum", 0.1}});
  b.op("norm", "batchnorm2d_infer", {x, w, bias, rm, rv});
  ValueId dy = b.in("bn.dy", {3, 4, 5, 5}), mean = b.in("bn.mean", {4}), invstd = b.in("bn.invstd.pos", {4});
  b.op("norm", "batchnorm2d_backward", {dy, x, w, mean, invstd});
  using V = std::vector<int64_t>;
  int i = 0;
  for (const V& ns : {V{6}, V{4, 6}}) {
    std::string p = "ln" + std::to_string(i++);
    std::vector<ir::Dim> nsd(ns.begin(), ns.end());
    ValueId lx = b.in(p + ".x", {3, 4, 6}), lw = b.in(p + ".w", nsd), lb = b.in(p + ".b", nsd);
    std::vector<ValueId> r = b.op("norm", "layernorm", {lx, lw, lb}, {{"normalized_shape", ns}});
    b.op("norm", "layernorm_backward", {b.in(p + ".dy", {3, 4, 6}), lx, lw, r[1], r[2]}, {{"normalized_shape", ns}});
  }
}

void optim(Builder& b, ValueId step) {
  std::vector<ir::Dim> s{5, 7};
  ValueId p = b.in("opt.p", s), g = b.in("opt.g", s), buf = b.in("opt.buf", s);
  ValueId m = b.in("opt.m", s), v = b.in("opt.v.pos", s);
  b.op("optim", "sgd_update", {p, g}, {{"lr", 0.1}});
  b.op("optim", "sgd_update", {p, g, buf, step}, {{"lr", 0.1}, {"momentum", 0.9}});
  b.op("optim", "sgd_update", {p, g, buf, step},
       {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}, {"nesterov", true}});
  b.op("optim", "sgd_update", {p, g, buf, step}, {{"lr", 0.1}, {"momentum", 0.5}, {"dampening", 0.25}});
  b.op("optim", "adam_update", {p, g, m, v, step}, {{"lr", 0.01}});
  b.op("optim", "adam_update", {p, g, m, v, step}, {{"lr", 0.01}, {"weight_decay", 0.05}});
  b.op("optim", "adam_update", {p, g, m, v, step}, {{"lr", 0.01}, {"weight_decay", 0.01}, {"decoupled", true}});
  // A scheduled lr (a last scalar operand) and the clip factor.
  ValueId lr = b.in("opt.lr.pos", {});
  b.op("optim", "sgd_update", {p, g, lr}, {{"lr", 0.1}});
  b.op("optim", "sgd_update", {p, g, buf, step, lr}, {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}});
  b.op("optim", "adam_update", {p, g, m, v, step, lr}, {{"lr", 0.01}, {"weight_decay", 0.01}, {"decoupled", true}});
  b.op("optim", "clip_coef", {b.in("opt.sumsq.pos", {})}, {{"max_norm", 0.5}});
  b.op("optim", "clip_coef", {b.in("opt.sumsq2.pos", {})}, {{"max_norm", 1e3}});
}

}  // namespace

OpsModule build_ops_module() {
  OpsModule om;
  om.module.name = "Ops";
  om.module.graphs.emplace_back();
  om.module.graphs.back().name = "ops";
  Builder b(om);
  ValueId step = b.in("step", {});
  elementwise(b);
  broadcast(b);
  dropout(b, step);
  shape_ops(b);
  reduce(b);
  losses(b);
  gemm(b);
  conv(b);
  pool(b);
  norms(b);
  optim(b, step);
  ir::verify(om.module);
  return om;
}

std::map<std::string, runtime::Tensor> random_op_inputs(const ir::Graph& g, std::mt19937& rng, float step) {
  std::map<std::string, runtime::Tensor> out;
  std::uniform_real_distribution<float> sym(-1.0f, 1.0f), pos(0.5f, 1.5f);
  for (ir::ValueId id : g.inputs) {
    const ir::Value& v = g.value(id);
    std::vector<int64_t> shape(v.type.shape.begin(), v.type.shape.end());
    runtime::Tensor t(v.type.dtype, shape);
    if (v.name == "step") {
      t.f32()[0] = step;
    } else if (v.type.dtype == ir::DType::i64) {
      std::uniform_int_distribution<int64_t> d(0, 9);  // ce.target: 10 classes; transposed labels: any
      for (int64_t i = 0; i < t.numel(); ++i) t.i64()[i] = d(rng);
    } else {
      bool positive = v.name.size() > 4 && v.name.compare(v.name.size() - 4, 4, ".pos") == 0;
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = positive ? pos(rng) : sym(rng);
    }
    out[v.name] = std::move(t);
  }
  return out;
}

}  // namespace dnnc::test
