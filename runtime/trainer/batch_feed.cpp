// Binding data set batches to graph inputs (runtime/trainer/batch_feed.h).
#include "runtime/trainer/batch_feed.h"

#include <fmt/format.h>

#include <stdexcept>

namespace dnnc::runtime {

std::map<std::string, Tensor> BatchFeed::make(const Dataset& ds, std::span<const int64_t> indices) const {
  std::map<std::string, Tensor> in;
  Tensor images = to_tensor(ds, mean.empty() ? std::vector<double>{0.0} : mean,
                            std.empty() ? std::vector<double>{1.0} : std, indices);
  if (image_dims != std::vector<int64_t>{ds.c, ds.h, ds.w}) {  // a flat (or otherwise shaped) input
    std::vector<int64_t> shape{static_cast<int64_t>(indices.size())};
    shape.insert(shape.end(), image_dims.begin(), image_dims.end());
    images = images.reshaped(shape);
  }
  in.emplace(image_input, std::move(images));
  if (!label_input.empty()) in.emplace(label_input, labels_tensor(ds, indices));
  return in;
}

BatchFeed make_batch_feed(const ir::Module& m, const std::string& graph, const Dataset& ds,
                          const std::vector<double>& mean, const std::vector<double>& std) {
  const ir::Graph* g = m.graph(graph);
  if (!g) throw std::runtime_error(fmt::format("model {} has no graph '{}'", m.name, graph));
  BatchFeed feed;
  feed.mean = mean;
  feed.std = std;
  const ir::Value* image = nullptr;
  for (ir::ValueId id : g->inputs) {
    const ir::Value& v = g->value(id);
    if (v.name == ir::kLrInput) continue;  // the scheduled lr: the trainer's, not the data's
    bool is_image = v.type.dtype == ir::DType::f32 && v.type.rank() >= 2 && v.type.shape[0] == ir::kBatch;
    bool is_label = v.type.dtype == ir::DType::i64 && v.type.rank() == 1 && v.type.shape[0] == ir::kBatch;
    if (is_image && !image) {
      image = &v;
      feed.image_input = v.name;
    } else if (is_label && feed.label_input.empty()) {
      feed.label_input = v.name;
    } else {
      throw std::runtime_error(fmt::format(
          "graph {} of model {}: input '{}' ({}) is not one the trainer can feed (one f32[{},...] image and one "
          "i64[{}] label)",
          graph, m.name, v.name, ir::to_string(v.type, m.batch_symbol), m.batch_symbol, m.batch_symbol));
    }
  }
  if (!image)
    throw std::runtime_error(
        fmt::format("graph {} of model {} has no f32[{},...] image input", graph, m.name, m.batch_symbol));
  const ir::Shape& s = image->type.shape;
  feed.image_dims.assign(s.begin() + 1, s.end());
  bool nchw = feed.image_dims == std::vector<int64_t>{ds.c, ds.h, ds.w};
  if (!nchw && image->type.numel(1) != ds.c * ds.h * ds.w)
    throw std::runtime_error(fmt::format(
        "model {} input '{}' is {}, but the data set's images are {}x{}x{} ({} values each): expected f32[{},{},{},{}] "
        "or another shape with {} values per sample",
        m.name, image->name, ir::to_string(image->type, m.batch_symbol), ds.c, ds.h, ds.w, ds.c * ds.h * ds.w,
        m.batch_symbol, ds.c, ds.h, ds.w, ds.c * ds.h * ds.w));
  return feed;
}

}  // namespace dnnc::runtime
