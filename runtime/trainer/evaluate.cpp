// Test accuracy and predictions with the infer graph (runtime/trainer/evaluate.h).
#include "runtime/trainer/evaluate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "ir/check.h"

namespace dnnc::runtime {

int64_t argmax(const float* row, int64_t n) {
  DNNC_CHECK(n >= 1, "argmax of an empty row");
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (row[i] > row[best] || std::isnan(row[best])) best = i;
  return best;
}

Tensor predict(ExecutableCache& cache, const Dataset& ds, const BatchFeed& feed, std::span<const int64_t> indices,
               int64_t max_batch) {
  DNNC_CHECK(max_batch >= 1, "batch size must be positive");
  auto count = static_cast<int64_t>(indices.size());
  Tensor out;
  for (int64_t begin = 0; begin < count; begin += max_batch) {
    int64_t b = std::min(max_batch, count - begin);
    auto inputs = feed.make(ds, indices.subspan(static_cast<size_t>(begin), static_cast<size_t>(b)));
    std::vector<Tensor> res = cache.get(kInferGraph, b).run(inputs);
    if (res.empty() || res[0].rank() != 2 || res[0].dim(0) != b || res[0].dtype() != ir::DType::f32)
      throw std::runtime_error(fmt::format("model {}: the infer graph's prediction is {}, expected f32[{},K]",
                                           cache.module().name, res.empty() ? "missing" : describe(res[0]), b));
    if (out.empty()) out = Tensor(ir::DType::f32, {count, res[0].dim(1)});
    if (res[0].dim(1) != out.dim(1))
      throw std::runtime_error(fmt::format("model {}: the infer graph's prediction changed width ({} vs {})",
                                           cache.module().name, res[0].dim(1), out.dim(1)));
    std::memcpy(out.f32() + begin * out.dim(1), res[0].f32(), res[0].nbytes());
  }
  return out;
}

EvalResult evaluate(ExecutableCache& cache, const Dataset& ds, const BatchFeed& feed, int64_t eval_batch) {
  auto t0 = std::chrono::steady_clock::now();
  double compile0 = cache.compile_seconds();
  std::vector<int64_t> all(static_cast<size_t>(ds.n));
  std::iota(all.begin(), all.end(), int64_t{0});
  EvalResult r;
  for (int64_t begin = 0; begin < ds.n; begin += eval_batch) {
    int64_t b = std::min(eval_batch, ds.n - begin);
    std::span<const int64_t> idx(all.data() + begin, static_cast<size_t>(b));
    Tensor pred = predict(cache, ds, feed, idx, eval_batch);
    for (int64_t i = 0; i < b; ++i)
      if (argmax(pred.f32() + i * pred.dim(1), pred.dim(1)) == ds.labels[static_cast<size_t>(begin + i)]) ++r.correct;
    r.total += b;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() -
              (cache.compile_seconds() - compile0);
  return r;
}

std::vector<std::vector<double>> softmax_rows(const Tensor& logits) {
  DNNC_CHECK(logits.rank() == 2 && logits.dtype() == ir::DType::f32, "softmax_rows takes a 2-d f32 tensor");
  int64_t n = logits.dim(0), k = logits.dim(1);
  std::vector<std::vector<double>> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.f32() + i * k;
    double mx = -INFINITY;
    for (int64_t j = 0; j < k; ++j) mx = std::max(mx, static_cast<double>(row[j]));
    std::vector<double>& p = out[static_cast<size_t>(i)];
    p.resize(static_cast<size_t>(k));
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += p[static_cast<size_t>(j)] = std::exp(static_cast<double>(row[j]) - mx);
    for (double& v : p) v /= sum;
  }
  return out;
}

}  // namespace dnnc::runtime
