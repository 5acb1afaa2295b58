// Shared setup of `dnnc train`, `eval` and `infer` (cli/cmd_setup.h).
#include "cli/cmd_setup.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "cli/commands.h"
#include "ir/check.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "runtime/data/cifar10.h"
#include "runtime/data/mnist.h"
#include "runtime/trainer/checkpoint_io.h"

namespace dnnc::cli {

std::string target_of(const runtime::Backend& backend) { return backend.name() == "cuda" ? "cuda" : "cpu"; }

ir::Module compile_model(const std::string& path, const RecipeOverrides& o, const std::string& layout,
                         const std::string& target) {
  ir::Module m = load_module(path);
  ir::verify(m);
  ir::TrainConfig& t = m.train;
  if (o.epochs) {
    if (*o.epochs < 1) throw std::invalid_argument(fmt::format("--epochs must be >= 1, got {}", *o.epochs));
    t.epochs = *o.epochs;
  }
  if (o.batch) {
    if (*o.batch < 1) throw std::invalid_argument(fmt::format("--batch must be >= 1, got {}", *o.batch));
    t.batch = *o.batch;
  }
  if (o.seed) {
    if (*o.seed < 0) throw std::invalid_argument(fmt::format("--seed must be >= 0, got {}", *o.seed));
    t.seed = *o.seed;
  }
  if (o.dataset) {
    if (t.data.dataset.empty()) {
      t.data.mean.clear();  // no normalization: mean 0, std 1
      t.data.std.clear();
    }
    t.data.dataset = *o.dataset;
  }
  if (o.lr) {
    if (!(*o.lr > 0)) throw std::invalid_argument(fmt::format("--lr must be > 0, got {}", *o.lr));
    t.optimizer.attrs["lr"] = *o.lr;
  }
  passes::compile(m, {.target = &passes::find_target(target), .layout = passes::parse_layout_choice(layout)});
  return m;
}

void prepare_output_file(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw std::invalid_argument(fmt::format("{} {}: is a folder; give a file in it, e.g. {}", flag, path,
                                            (fs::path(path) / "model.safetensors").string()));
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec))
    throw std::invalid_argument(fmt::format("{} {}: {} is not a folder", flag, path, parent.string()));
  if (!fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec)
      throw std::invalid_argument(
          fmt::format("{} {}: cannot create the folder {}: {}", flag, path, parent.string(), ec.message()));
    std::cout << fmt::format("created folder {} for {}\n", parent.string(), flag);
  }
  if (::access(parent.c_str(), W_OK) != 0)
    throw std::invalid_argument(
        fmt::format("{} {}: cannot write to the folder {}: {}", flag, path, parent.string(), std::strerror(errno)));
}

std::string describe_recipe(const ir::Module& m) {
  const ir::OptimizerConfig& opt = m.train.optimizer;
  std::string s = opt.kind;
  for (const char* key : {"lr", "momentum", "dampening", "weight_decay", "nesterov", "beta1", "beta2", "eps"}) {
    auto it = opt.attrs.find(key);
    if (it == opt.attrs.end()) continue;
    const auto* d = std::get_if<double>(&it->second);
    const auto* b = std::get_if<bool>(&it->second);
    if ((d && *d == 0 && std::string(key) != "lr") || (b && !*b)) continue;  // defaults that do nothing
    s += fmt::format(" {} {}", key, ir::attr_to_string(it->second));
  }
  const ir::ScheduleConfig& sched = m.train.schedule;
  if (!sched.kind.empty()) {
    std::string args;
    for (const auto& [k, v] : sched.attrs) args += fmt::format("{}{} {}", args.empty() ? "" : ", ", k, ir::attr_to_string(v));
    s += fmt::format(", {} schedule{}", sched.kind, args.empty() ? "" : " (" + args + ")");
  }
  if (m.train.clip_grad_norm > 0) s += fmt::format(", gradients clipped to norm {}", m.train.clip_grad_norm);
  s = fmt::format("{}, batch {}, {} epoch{}, seed {}", s, m.train.batch, m.train.epochs,
                  m.train.epochs == 1 ? "" : "s", m.train.seed);
  const ir::DataConfig& d = m.train.data;
  if (d.crop_padding) s += fmt::format(", random crop (padding {})", d.crop_padding);
  if (d.flip_p) s += fmt::format(", random horizontal flip (p {})", d.flip_p);
  return s;
}

std::string describe_parameters(const ir::Module& m) {
  int64_t weights = 0, buffers = 0, weight_tensors = 0, buffer_tensors = 0;
  for (const ir::Param& p : m.params) {
    int64_t n = p.type.numel(0).value_or(0);
    if (p.role == ir::ParamRole::weight) weights += n, ++weight_tensors;
    if (p.role == ir::ParamRole::buffer) buffers += n, ++buffer_tensors;
  }
  std::string s = fmt::format("{} parameters ({} tensors)", weights, weight_tensors);
  if (buffer_tensors) s += fmt::format(" and {} buffer values ({} tensors)", buffers, buffer_tensors);
  return s;
}

namespace {

constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist

bool is_idx_dataset(const std::string& ds) { return ds == "mnist" || ds == "fashion_mnist"; }

// The data set whose files `dir` holds: "mnist" for MNIST-format IDX files (MNIST and
// Fashion-MNIST alike), "cifar10" for CIFAR-10 .bin files, "" if neither.
std::string infer_dataset(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& p : runtime::mnist_candidate_paths(dir, "train-images-idx3-ubyte"))
    if (fs::is_regular_file(p, ec)) return "mnist";
  for (const char* f : {"data_batch_1.bin", "test_batch.bin", "cifar-10-batches-bin/data_batch_1.bin"})
    if (fs::is_regular_file(fs::path(dir) / f, ec)) return "cifar10";
  return "";
}

}  // namespace

DataSource resolve_data(ir::Module& m, const std::string& data_flag) {
  DataSource src{data_flag, false};
  std::string& ds = m.train.data.dataset;
  std::error_code ec;
  if (ds.empty()) {
    if (data_flag.empty())
      throw std::invalid_argument(fmt::format(
          "{}: model {} names no data set (its train block has no `data = mnist(...)`, `fashion_mnist(...)` or "
          "`cifar10(...)`); pass --data DIR (the format is inferred from its files) or --dataset NAME",
          m.source_file, m.name));
    if (!std::filesystem::is_directory(data_flag, ec))
      throw std::runtime_error(fmt::format("--data {}: no such folder", data_flag));
    ds = infer_dataset(data_flag);
    if (ds.empty())
      throw std::runtime_error(fmt::format(
          "--data {}: cannot tell its data set: it holds no MNIST-format IDX files (train-images-idx3-ubyte[.gz]) "
          "and no CIFAR-10 binary files (data_batch_1.bin); pass --dataset NAME, or --data the folder that holds them",
          data_flag));
    src.inferred = true;
  }
  if (src.dir.empty()) src.dir = ds == "mnist" ? "data/mnist" : ds == "fashion_mnist" ? kFashionMnistDir : "data/cifar10";
  if (!std::filesystem::is_directory(src.dir, ec)) {
    std::string how = ds == "mnist"   ? fmt::format("fetch MNIST with scripts/fetch-mnist {}", src.dir)
                      : ds == "fashion_mnist" && src.dir == kFashionMnistDir
                          ? "install Debian's package dataset-fashion-mnist (apt-get install dataset-fashion-mnist)"
                      : ds == "fashion_mnist"
                          ? fmt::format("put Fashion-MNIST's IDX files there (Debian's package dataset-fashion-mnist "
                                        "installs them in {})",
                                        kFashionMnistDir)
                          : fmt::format("put the CIFAR-10 binary files there, or make synthetic ones with dnnc data "
                                        "synth-cifar {}",
                                        src.dir);
    throw std::runtime_error(
        fmt::format("{} data folder {} does not exist; {}, or pass --data DIR (docs/data.md)", ds, src.dir, how));
  }
  return src;
}

runtime::Dataset load_split(const ir::Module& m, const DataSource& src, bool train) {
  const std::string& ds = m.train.data.dataset;
  if (is_idx_dataset(ds)) return runtime::load_mnist(src.dir, train);
  if (ds == "cifar10") return runtime::load_cifar10(src.dir, train);
  throw InternalError("cli load_split", fmt::format("data set '{}' of model {} was not resolved", ds, m.name),
                      "cli/cmd_setup.cpp");
}

void add_device_options(CLI::App& cmd, DeviceOptions& o) {
  cmd.add_option("--device", o.device, "auto (best available), cpu, cuda or reference")
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "reference"}));
  cmd.add_flag("--tf32", o.tf32,
               "cuda only: run GEMMs in TF32 (faster, about 1e-3 relative error); default exact fp32");
  cmd.add_option("--layout", o.layout, "activation layout: auto (the cost model), nchw or nhwc (forced)")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}));
}

void warn(const std::string& text) {
  std::cout.flush();  // the warning comes after what was printed so far, on a pipe too
  std::cerr << "dnnc: warning: " << text << "\n";
}

void load_init_weights(const ir::Module& m, const std::string& path, bool allow_other_model,
                       runtime::ParamStore& params) {
  std::cout.flush();  // the warnings on std::cerr come after what was printed so far
  for (const std::string& w : runtime::load_state_dict_file(m, path, params, {.allow_other_model = allow_other_model}))
    warn(w);
}

void add_data_options(CLI::App& cmd, std::string& data, std::optional<std::string>& dataset) {
  cmd.add_option("--data", data,
                 "data folder (default per data set: data/mnist, /usr/share/datasets/fashion-mnist, data/cifar10)");
  cmd.add_option("--dataset", dataset, "data set, replacing the train block's (default: the block's, or inferred "
                                       "from the files of --data)")
      ->check(CLI::IsMember({"mnist", "fashion_mnist", "cifar10"}));
}

void add_allow_other_model_flag(CLI::App& cmd, bool& flag) {
  cmd.add_flag("--allow-other-model", flag,
               "load --init even if it was saved from another model (its names and shapes must still match)");
}

void check_device_options(const DeviceOptions& o) {
  if (o.tf32 && o.device != "auto" && o.device != "cuda")
    throw std::invalid_argument(fmt::format("--tf32 applies to the cuda device only, but --device is {}", o.device));
}

std::unique_ptr<runtime::Backend> choose_device(const DeviceOptions& o, std::ostream& out) {
  check_device_options(o);
  runtime::BackendRegistry registry;
  runtime::register_builtin_backends(registry);
  runtime::BackendOptions options;
  options.tf32 = o.tf32;
  options = runtime::backend_options_from_env(std::move(options));  // $DNNC_CUBLASLT_*, documented in docs/cuda.md
  runtime::BackendChoice choice = runtime::select_backend(registry, o.device, options);
  out << choice.message << std::endl;  // flushed: a warning on std::cerr follows it
  if (o.tf32 && choice.backend->name() != "cuda")
    std::cerr << fmt::format(
        "dnnc: warning: --tf32 ignored: --device auto chose {} because cuda is not available "
        "(see the device line); GEMMs run in exact fp32\n",
        choice.backend->name());
  return std::move(choice.backend);
}

}  // namespace dnnc::cli
