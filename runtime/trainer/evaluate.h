// Running the `infer` graph over a data set: test accuracy (argmax of the prediction) and the
// per-image predictions behind `dnnc infer`.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "runtime/data/dataset.h"
#include "runtime/trainer/batch_feed.h"
#include "runtime/trainer/executable_cache.h"

namespace dnnc::runtime {

struct EvalResult {
  int64_t correct = 0;
  int64_t total = 0;
  double seconds = 0;  // wall time, compilation excluded
  double accuracy() const { return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0; }
};

/// The graph evaluation runs.
inline constexpr const char* kInferGraph = "infer";

/// Index of the largest value of row[0..n) (the first one on ties; NaN never wins). Asserts n >= 1.
int64_t argmax(const float* row, int64_t n);

/// The infer graph's prediction for samples `indices` of `ds`, as one f32 tensor [count, K],
/// run in batches of at most `max_batch`. Throws std::runtime_error if the prediction is not
/// 2-d, or what the backend throws.
Tensor predict(ExecutableCache& cache, const Dataset& ds, const BatchFeed& feed, std::span<const int64_t> indices,
               int64_t max_batch);

/// Accuracy of the infer graph on all of `ds`: batches of `eval_batch` in order plus the
/// remainder; a sample is correct if the argmax of its prediction is its label. Throws like predict.
EvalResult evaluate(ExecutableCache& cache, const Dataset& ds, const BatchFeed& feed, int64_t eval_batch);

/// softmax of each row of a 2-d f32 tensor, computed in double with the row max subtracted.
/// Asserts the tensor is 2-d f32.
std::vector<std::vector<double>> softmax_rows(const Tensor& logits);

}  // namespace dnnc::runtime
