// `dnnc eval` (test-set accuracy of a checkpoint) and `dnnc infer` (class and softmax
// probabilities of given images), both with the model's infer graph.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cli/cmd_setup.h"
#include "cli/commands.h"
#include "runtime/data/cifar10.h"
#include "runtime/data/idx.h"
#include "runtime/reference/interpreter.h"
#include "runtime/trainer/checkpoint_io.h"
#include "runtime/trainer/evaluate.h"

namespace dnnc::cli {
namespace {

struct EvalCliOptions {
  std::string file, init, data;
  std::optional<std::string> dataset;
  DeviceOptions device;
  int64_t eval_batch = 500;
  bool allow_other_model = false;
};

struct InferCliOptions {
  std::string file, init, images, labels;
  DeviceOptions device;
  int64_t index = 0, count = -1, batch = 500;
  bool json = false, allow_other_model = false;
};

// The model's params with the weights and buffers of the state_dict at `init`.
runtime::ParamStore load_weights(const ir::Module& m, const std::string& init, bool allow_other_model) {
  runtime::ParamStore params = runtime::reference::init_params(m, static_cast<uint64_t>(m.train.seed));
  load_init_weights(m, init, allow_other_model, params);
  return params;
}

int run_eval(const EvalCliOptions& o) {
  std::unique_ptr<runtime::Backend> backend = choose_device(o.device, std::cout);
  ir::Module m = compile_model(o.file, {.dataset = o.dataset}, o.device.layout, target_of(*backend));
  runtime::ParamStore params = load_weights(m, o.init, o.allow_other_model);  // before the data: fails faster
  DataSource src = resolve_data(m, o.data);
  runtime::Dataset test_set = load_split(m, src, false);
  runtime::ExecutableCache cache(*backend, m, params);
  runtime::BatchFeed feed =
      runtime::make_batch_feed(m, runtime::kInferGraph, test_set, m.train.data.mean, m.train.data.std);
  runtime::EvalResult r = runtime::evaluate(cache, test_set, feed, o.eval_batch);
  std::cout << fmt::format("test accuracy: {:.4f} ({}/{}) on {} in {:.2f} s\n", r.accuracy(), r.correct, r.total,
                           src.dir, r.seconds);
  return 0;
}

// Images from an IDX file (n x H x W, one channel; or n x C x H x W) or a CIFAR-10 .bin file.
runtime::Dataset load_images(const std::string& path) {
  if (path.ends_with(".bin")) {
    runtime::Dataset ds;
    runtime::append_cifar10_file(ds, path);
    return ds;
  }
  runtime::IdxArray a = runtime::read_idx(path);
  runtime::Dataset ds;
  if (a.dims.size() == 3) {
    ds.n = a.dims[0], ds.c = 1, ds.h = a.dims[1], ds.w = a.dims[2];
  } else if (a.dims.size() == 4) {
    ds.n = a.dims[0], ds.c = a.dims[1], ds.h = a.dims[2], ds.w = a.dims[3];
  } else {
    throw std::runtime_error(
        fmt::format("{}: expected images of rank 3 (n, h, w) or 4 (n, c, h, w), found rank {}", path, a.dims.size()));
  }
  ds.images = std::move(a.data);
  ds.labels.assign(static_cast<size_t>(ds.n), 0);
  return ds;
}

std::vector<int64_t> load_labels(const std::string& path, int64_t n) {
  runtime::IdxArray a = runtime::read_idx(path);
  if (a.dims.size() != 1 || a.dims[0] != n)
    throw std::runtime_error(fmt::format("{}: expected {} labels (rank 1), found shape of rank {} with {} entries",
                                         path, n, a.dims.size(), a.dims.empty() ? 0 : a.dims[0]));
  return {a.data.begin(), a.data.end()};
}

int run_infer(const InferCliOptions& o) {
  std::unique_ptr<runtime::Backend> backend = choose_device(o.device, o.json ? std::cerr : std::cout);
  ir::Module m = compile_model(o.file, {}, o.device.layout, target_of(*backend));
  runtime::ParamStore params = load_weights(m, o.init, o.allow_other_model);
  runtime::Dataset ds = load_images(o.images);
  std::vector<int64_t> labels;
  if (!o.labels.empty()) labels = load_labels(o.labels, ds.n);
  if (o.index < 0 || o.index >= ds.n)
    throw std::invalid_argument(fmt::format("--index {} is outside the {} images of {}", o.index, ds.n, o.images));
  int64_t count = o.count < 0 ? ds.n - o.index : std::min(o.count, ds.n - o.index);
  std::vector<int64_t> idx(static_cast<size_t>(count));
  std::iota(idx.begin(), idx.end(), o.index);

  runtime::ExecutableCache cache(*backend, m, params);
  runtime::BatchFeed feed = runtime::make_batch_feed(m, runtime::kInferGraph, ds, m.train.data.mean, m.train.data.std);
  runtime::Tensor pred = runtime::predict(cache, ds, feed, idx, o.batch);
  std::vector<std::vector<double>> probs = runtime::softmax_rows(pred);
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<double>& p = probs[static_cast<size_t>(i)];
    int64_t cls = runtime::argmax(pred.f32() + i * pred.dim(1), pred.dim(1));
    int64_t image = o.index + i;
    if (o.json) {
      nlohmann::ordered_json j = {{"image", image}, {"class", cls}, {"probs", p}};
      if (!labels.empty()) j["label"] = labels[static_cast<size_t>(image)];
      j["logits"] = std::vector<float>(pred.f32() + i * pred.dim(1), pred.f32() + (i + 1) * pred.dim(1));
      std::cout << j.dump() << "\n";
      continue;
    }
    std::string line = fmt::format("image {}: class {} (p {:.4f})", image, cls, p[static_cast<size_t>(cls)]);
    if (!labels.empty()) line += fmt::format(", label {}", labels[static_cast<size_t>(image)]);
    line += "  probs";
    for (double v : p) line += fmt::format(" {:.4f}", v);
    std::cout << line << "\n";
  }
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<EvalCliOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Test-set accuracy of a model with the weights of a checkpoint");
  cmd->add_option("file", o->file, "model file (.dnn)")->required();
  cmd->add_option("--init", o->init, "state_dict to evaluate (.safetensors)")->required();
  add_data_options(*cmd, o->data, o->dataset);
  add_allow_other_model_flag(*cmd, o->allow_other_model);
  add_device_options(*cmd, o->device);
  cmd->add_option("--eval-batch", o->eval_batch, "batch size")->check(CLI::PositiveNumber);
  cmd->callback([&run, o] { run = [o] { return guarded([&] { return run_eval(*o); }); }; });
}

void add_infer_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<InferCliOptions>();
  CLI::App* cmd = app.add_subcommand("infer", "Predicted class and softmax probabilities of images");
  cmd->add_option("file", o->file, "model file (.dnn)")->required();
  cmd->add_option("--init", o->init, "state_dict with the weights (.safetensors)")->required();
  cmd->add_option("--images", o->images, "images: IDX file (.idx / -ubyte, plain or .gz) or CIFAR-10 .bin")->required();
  cmd->add_option("--labels", o->labels, "IDX labels file, to print each image's true label");
  cmd->add_option("--index", o->index, "first image (0-based)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--count", o->count, "number of images (default: all from --index)")->check(CLI::PositiveNumber);
  add_allow_other_model_flag(*cmd, o->allow_other_model);
  add_device_options(*cmd, o->device);
  cmd->add_flag("--json", o->json, "one JSON object per image with full-precision probs and logits");
  cmd->callback([&run, o] { run = [o] { return guarded([&] { return run_infer(*o); }); }; });
}

}  // namespace dnnc::cli
