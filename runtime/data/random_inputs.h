// Seeded random values for every input of a graph, at a given batch: the synthetic batches the
// benchmarks time and the tests compare backends on.
#pragma once
#include <map>
#include <random>
#include <string>

#include "ir/graph.h"
#include "runtime/tensor.h"

namespace dnnc::runtime {

/// How random_inputs fills f32 inputs.
enum class Fill { uniform, normal };  // uniform in [-1, 1), or N(0, 1)

/// Random values for every input of `g` at batch `batch` (the batch dim bound to it): f32 as
/// `fill` says, i64 labels uniform in [0, classes), a scheduled lr (ir::kLrInput) uniform in
/// [1e-4, 1e-3). The same engine state gives the same tensors.
template <class Rng>
std::map<std::string, Tensor> random_inputs(const ir::Graph& g, int64_t batch, Rng& rng, Fill fill = Fill::uniform,
                                            int64_t classes = 10) {
  std::map<std::string, Tensor> out;
  for (ir::ValueId id : g.inputs) {
    const ir::Value& v = g.value(id);
    std::vector<int64_t> shape;
    for (ir::Dim d : v.type.shape) shape.push_back(d == ir::kBatch ? batch : d);
    Tensor t(v.type.dtype, shape);
    if (v.name == ir::kLrInput) {  // a scheduled learning rate: uniform in [1e-4, 1e-3)
      std::uniform_real_distribution<float> d(1e-4f, 1e-3f);
      t.f32()[0] = d(rng);
    } else if (v.type.dtype == ir::DType::i64) {
      std::uniform_int_distribution<int64_t> d(0, classes - 1);
      for (int64_t i = 0; i < t.numel(); ++i) t.i64()[i] = d(rng);
    } else if (fill == Fill::normal) {
      std::normal_distribution<float> d(0.0f, 1.0f);
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = d(rng);
    } else {
      std::uniform_real_distribution<float> d(-1.0f, 1.0f);
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = d(rng);
    }
    out[v.name] = std::move(t);
  }
  return out;
}

}  // namespace dnnc::runtime
