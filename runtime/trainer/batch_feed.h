// How a data set feeds a model's graphs: which graph input takes the images and which the
// labels, checked against the data, and the normalized batch tensors.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/data/dataset.h"
#include "runtime/tensor.h"

namespace dnnc::runtime {

struct BatchFeed {
  std::string image_input;        // the f32 [N, ...] input with C*H*W values per sample
  std::vector<int64_t> image_dims;  // its dims after N ({C, H, W}, or e.g. {784} for an MLP's flat input)
  std::string label_input;        // the i64 [N] input; empty if the graph takes no labels (infer)
  std::vector<double> mean, std;  // per-channel normalization (torchvision's Normalize)

  /// The graph inputs for samples `indices` of `ds`. Throws std::invalid_argument from
  /// to_tensor for a bad index.
  std::map<std::string, Tensor> make(const Dataset& ds, std::span<const int64_t> indices) const;
};

/// Finds the image and label inputs of graph `graph` of `m` and checks that `ds` fits them.
/// The image input is the first f32 input of shape [N, ...]: [N, C, H, W] takes the images as
/// they are, any other shape with C*H*W values per sample (e.g. [N, 784] for MNIST) takes them
/// flattened in C, H, W order, as `flatten` or PyTorch's `x.view(n, -1)` would. The label
/// input is the i64 [N] one; the scheduled-lr input (ir::kLrInput) is left to the trainer. `mean`/`std` come from the train block (empty: 0 and 1). Throws
/// std::runtime_error naming the graph and input if the graph is missing, has another input,
/// or the data set's images do not fit (expected vs found).
BatchFeed make_batch_feed(const ir::Module& m, const std::string& graph, const Dataset& ds,
                          const std::vector<double>& mean, const std::vector<double>& std);

}  // namespace dnnc::runtime
