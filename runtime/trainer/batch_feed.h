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
  std::string image_input;        // the f32 [N, C, H, W] input
  std::string label_input;        // the i64 [N] input; empty if the graph takes no labels (infer)
  std::vector<double> mean, std;  // per-channel normalization (torchvision's Normalize)

  /// The graph inputs for samples `indices` of `ds`. Throws std::invalid_argument from
  /// to_tensor for a bad index.
  std::map<std::string, Tensor> make(const Dataset& ds, std::span<const int64_t> indices) const;
};

/// Finds the image and label inputs of graph `graph` of `m` and checks that `ds` fits them
/// (image size C x H x W). `mean`/`std` come from the train block (empty: 0 and 1). Throws
/// std::runtime_error naming the graph and input if the graph is missing, its inputs are not
/// one f32 [N, C, H, W] image (plus one i64 [N] label for graphs that take labels), or the data
/// set's images have another size (expected vs found).
BatchFeed make_batch_feed(const ir::Module& m, const std::string& graph, const Dataset& ds,
                          const std::vector<double>& mean, const std::vector<double>& std);

}  // namespace dnnc::runtime
