// dnnc checkpoints: a PyTorch-loadable state_dict file (weights and buffers under their
// state_dict names) and a companion training-state file for --resume (every param including
// the optimizer state, plus the position in the run). Format: docs/training.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/reference/interpreter.h"

namespace dnnc::runtime {

/// Where a run is: `epoch` (0-based) is the epoch in progress, `batch` how many of its batches
/// are done, `step` how many train steps were taken in all. The start of a run is {0, 0, 0};
/// the end of epoch e is {e + 1, 0, steps}.
struct TrainPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t step = 0;
  friend bool operator==(const TrainPosition&, const TrainPosition&) = default;
};

/// What a checkpoint records about the run that wrote it (checked on --resume).
struct RunInfo {
  int64_t batch = 0;  // batch size
  uint64_t seed = 0;  // the run's seed (shuffling)
  bool shuffle = true;
};

/// The state_dict of `m`: its weights and buffers in module (= PyTorch) order. Throws
/// std::runtime_error naming a param that is missing from `params`.
NamedTensors state_dict(const ir::Module& m, const ParamStore& params);

/// Every param of `m` (weights, buffers and optimizer state) in module order. Throws like state_dict.
NamedTensors training_state(const ir::Module& m, const ParamStore& params);

/// Copies a state_dict into `params`. Every weight and buffer of `m` must be in `tensors` with
/// its dtype and shape, and nothing else may be; otherwise throws std::runtime_error naming
/// `source` and listing every missing, unexpected and mis-shaped name (expected vs found).
/// `params` is untouched on failure.
void load_state_dict(const ir::Module& m, const NamedTensors& tensors, const std::string& source, ParamStore& params);

/// How load_state_dict_file treats a dnnc checkpoint saved from another model.
struct StateDictCheck {
  bool allow_other_model = false;  // --allow-other-model: load it if names and shapes match
};

/// Reads a safetensors state_dict from `path` and loads it as load_state_dict does. A file that
/// dnnc wrote records its model: one of another model (another name) is refused unless
/// `check.allow_other_model`, with what differs (model name and source, input normalization);
/// dnnc's training-state file is refused with the name of the state_dict file to give instead.
/// A file without dnnc metadata (e.g. written by PyTorch) is checked by names and shapes only.
/// Returns warnings for the caller to print (another model allowed; the same model name with
/// another input normalization). Throws std::runtime_error naming the file if it cannot be
/// read or does not match the module.
std::vector<std::string> load_state_dict_file(const ir::Module& m, const std::string& path, ParamStore& params,
                                              const StateDictCheck& check = {});

/// The training-state file that goes with state_dict file `path`: `X.safetensors` ->
/// `X.train.safetensors` (any other name gets `.train.safetensors` appended).
std::string training_state_path(const std::string& path);

/// Writes `path` (the state_dict; metadata: format, model, its source file and normalization,
/// position) and
/// training_state_path(path) (every param; metadata: position, run info, optimizer), each
/// atomically. Throws std::runtime_error naming the file if one cannot be written.
/// `hooks` (a test seam, see write_safetensors) apply to both files.
void save_checkpoint(const std::string& path, const ir::Module& m, const ParamStore& params, const TrainPosition& pos,
                     const RunInfo& run, const SaveHooks* hooks = nullptr);

/// Loads a checkpoint for --resume: reads training_state_path(path) (or `path` itself if it
/// already is a training-state file), checks it was written for this model and this run's
/// batch size, seed and shuffling (all of which decide the rest of the run), and replaces every
/// param of `m` in `params`. Returns the position to resume from. Throws std::runtime_error
/// naming the file for an unreadable or foreign file, a metadata mismatch (expected vs found),
/// or missing, unexpected or mis-shaped tensors; `params` is untouched on failure.
TrainPosition load_checkpoint(const std::string& path, const ir::Module& m, const RunInfo& run, ParamStore& params);

}  // namespace dnnc::runtime
