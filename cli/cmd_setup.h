// Shared setup of `dnnc train`, `eval` and `infer`: compiling a model with the recipe
// overrides, choosing the device, loading the model's data set and its normalization.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "ir/graph.h"
#include "runtime/backends.h"
#include "runtime/data/dataset.h"
#include "runtime/reference/interpreter.h"

namespace CLI {
class App;
}  // namespace CLI

namespace dnnc::cli {

/// Command-line replacements for the train block's values.
struct RecipeOverrides {
  std::optional<int64_t> epochs, batch, seed;
  std::optional<double> lr;
  std::optional<std::string> dataset;  // --dataset: mnist, fashion_mnist or cifar10
};

/// Loads `path` (load_module), applies `o` to module.train (before the passes: the optimizer
/// pass bakes lr into the graph) and runs the default pipeline with select-layout's `layout`
/// choice (auto|nchw|nhwc, `--layout`) for `target` (cpu|cuda), so the module has graphs
/// "train_step" and "infer". Throws ir::CompileError for model errors, std::invalid_argument
/// if an override is out of range.
ir::Module compile_model(const std::string& path, const RecipeOverrides& o, const std::string& layout = "auto",
                         const std::string& target = "cpu");

/// The select-layout target whose code `backend` runs: "cuda" for the cuda backend, else "cpu"
/// (the reference interpreter runs either layout).
std::string target_of(const runtime::Backend& backend);

/// One line describing the recipe: "sgd lr 0.001 momentum 0.9, batch 128, 5 epochs, seed 1".
std::string describe_recipe(const ir::Module& m);

/// Makes output file `path` (given with option `flag`) writable before any work is done: creates
/// its missing parent folders; throws std::invalid_argument naming the flag and the path if it
/// is a folder, its parent is not a folder, or the folder cannot be created or written to.
void prepare_output_file(const std::string& path, const std::string& flag);

/// Prints "dnnc: warning: <text>" on std::cerr (stdout stays the command's output).
void warn(const std::string& text);

/// Loads the state_dict at `path` (`--init`) into `params` (runtime::load_state_dict_file):
/// refuses a checkpoint of another model unless `allow_other_model` (`--allow-other-model`),
/// and prints its warnings with warn().
void load_init_weights(const ir::Module& m, const std::string& path, bool allow_other_model,
                       runtime::ParamStore& params);

/// Adds `--data DIR` and `--dataset NAME` to `cmd`.
void add_data_options(CLI::App& cmd, std::string& data, std::optional<std::string>& dataset);

/// Adds `--allow-other-model` to `cmd`, stored in `flag`.
void add_allow_other_model_flag(CLI::App& cmd, bool& flag);

/// The module's size as PyTorch counts it: "535818 parameters (6 tensors)", the elements of the
/// trainable weights, plus " and 97 buffer values (4 tensors)" where it has buffers (batchnorm
/// running statistics). Optimizer state is not counted.
std::string describe_parameters(const ir::Module& m);

/// Where the data comes from: the folder, and whether the data set was inferred from its files.
struct DataSource {
  std::string dir;
  bool inferred = false;
};

/// The module's data (`--data` given as `data_flag`, or empty): the train block's data set (or
/// `--dataset`'s) in `data_flag`, or by default data/mnist, Debian's
/// /usr/share/datasets/fashion-mnist or data/cifar10. A module that names no data set takes
/// it from the files of `data_flag` (MNIST-format IDX: mnist; CIFAR-10 .bin: cifar10), stored
/// into module.train.data. Throws std::invalid_argument if there is neither, std::runtime_error
/// naming the folder (and how to get the data: the fetch script, the Debian package) if it is
/// missing or its files name no data set.
DataSource resolve_data(ir::Module& m, const std::string& data_flag);

/// The training (`train`) or test split of the module's data set (resolved by resolve_data).
/// Throws std::runtime_error from the loaders.
runtime::Dataset load_split(const ir::Module& m, const DataSource& src, bool train);

/// `--device`, `--tf32` and `--layout`, the same on train, eval and infer.
struct DeviceOptions {
  std::string device = "auto";  // auto, cpu, cuda or reference
  bool tf32 = false;            // cuda GEMMs in TF32
  std::string layout = "auto";  // --layout: select-layout's choice (auto, nchw, nhwc)
};

/// Adds `--device`, `--tf32` and `--layout` to `cmd`, stored in `o`.
void add_device_options(CLI::App& cmd, DeviceOptions& o);

/// Throws std::invalid_argument if the options contradict each other: `--tf32` with
/// `--device cpu` or `reference`. choose_device checks this too; call it first to fail early.
void check_device_options(const DeviceOptions& o);

/// The backend for `--device` (registry of runtime/backends.h); prints the one-line reason for
/// the choice to `out` (for cuda with the GEMM mode). Throws like runtime::select_backend and
/// check_device_options. With `--device auto --tf32` on a machine where auto picks another
/// device than cuda, prints one warning line to std::cerr and goes on in exact fp32 (the user
/// asked for the best device, not for cuda).
std::unique_ptr<runtime::Backend> choose_device(const DeviceOptions& o, std::ostream& out);

}  // namespace dnnc::cli
