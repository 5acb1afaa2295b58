// Saving and loading dnnc checkpoints: the state_dict file and the training-state file
// (runtime/trainer/checkpoint_io.h, docs/training.md).
#include "runtime/trainer/checkpoint_io.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <set>
#include <stdexcept>

namespace dnnc::runtime {
namespace {

constexpr const char* kFormat = "dnnc-checkpoint";
constexpr const char* kVersion = "1";

using RoleFilter = std::function<bool(ir::ParamRole)>;

bool in_state_dict(ir::ParamRole r) { return r != ir::ParamRole::optimizer_state; }
bool any_role(ir::ParamRole) { return true; }

std::vector<int64_t> concrete_shape(const ir::Param& p) { return {p.type.shape.begin(), p.type.shape.end()}; }

std::string type_str(ir::DType dt, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", ir::dtype_name(dt), fmt::join(shape, ","));
}

NamedTensors collect(const ir::Module& m, const ParamStore& params, const RoleFilter& keep) {
  NamedTensors out;
  for (const ir::Param& p : m.params) {
    if (!keep(p.role)) continue;
    const Tensor* t = params.find(p.name);
    if (!t) throw std::runtime_error(fmt::format("checkpoint: param '{}' of model {} has no value", p.name, m.name));
    out.emplace_back(p.name, *t);
  }
  return out;
}

// Checks `tensors` against the params of `m` selected by `keep` (all present, nothing else,
// dtypes and shapes as declared), then copies them into `params`.
void check_and_load(const ir::Module& m, const NamedTensors& tensors, const std::string& source, const RoleFilter& keep,
                    ParamStore& params) {
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : tensors) given[name] = &t;
  std::vector<std::string> missing, mis_shaped;
  std::set<std::string> expected;
  for (const ir::Param& p : m.params) {
    if (!keep(p.role)) continue;
    expected.insert(p.name);
    auto it = given.find(p.name);
    if (it == given.end()) {
      missing.push_back(p.name);
      continue;
    }
    std::vector<int64_t> want = concrete_shape(p);
    if (it->second->dtype() != p.type.dtype || it->second->shape() != want)
      mis_shaped.push_back(
          fmt::format("{} (expected {}, found {})", p.name, type_str(p.type.dtype, want), describe(*it->second)));
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : tensors)
    if (!expected.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !mis_shaped.empty()) {
    std::string msg = fmt::format("{}: does not match model {}", source, m.name);
    if (!missing.empty()) msg += fmt::format("\n  missing: {}", fmt::join(missing, ", "));
    if (!unexpected.empty()) msg += fmt::format("\n  unexpected: {}", fmt::join(unexpected, ", "));
    if (!mis_shaped.empty()) msg += fmt::format("\n  wrong shape: {}", fmt::join(mis_shaped, "; "));
    throw std::runtime_error(msg);
  }
  for (const auto& [name, t] : tensors) params.tensors[name] = t;
}

// The model's input normalization as the DSL writes it: "mean (0.5) std (0.5)", "" for none.
std::string normalization(const ir::Module& m) {
  const ir::DataConfig& d = m.train.data;
  if (d.mean.empty() && d.std.empty()) return "";
  return fmt::format("mean ({}) std ({})", fmt::join(d.mean, ", "), fmt::join(d.std, ", "));
}

std::map<std::string, std::string> position_metadata(const ir::Module& m, const TrainPosition& pos, const char* kind) {
  return {{"format", kFormat},
          {"version", kVersion},
          {"kind", kind},
          {"model", m.name},
          {"source", m.source_file},
          {"normalize", normalization(m)},
          {"epoch", std::to_string(pos.epoch)},
          {"batch_in_epoch", std::to_string(pos.batch)},
          {"step", std::to_string(pos.step)}};
}

std::string meta_or(const SafetensorsFile& f, const std::string& key, const std::string& fallback = "") {
  auto it = f.metadata.find(key);
  return it == f.metadata.end() ? fallback : it->second;
}

// "MnistMLP (models/mnist_mlp.dnn)", or the name alone where the source is unknown.
std::string model_label(const std::string& name, const std::string& source) {
  return source.empty() ? name : fmt::format("{} ({})", name, source);
}

std::string shown(const std::string& normalize) { return normalize.empty() ? "none" : normalize; }

// Checks the dnnc metadata of state_dict file `f` against `m`; returns warnings.
std::vector<std::string> check_state_dict_metadata(const ir::Module& m, const SafetensorsFile& f,
                                                   const std::string& path, const StateDictCheck& check) {
  if (meta_or(f, "format") != kFormat) return {};  // not written by dnnc: names and shapes decide
  if (meta_or(f, "kind") == "training_state") {
    const std::string ext = ".train.safetensors";
    std::string sd = path.ends_with(ext) ? path.substr(0, path.size() - ext.size()) + ".safetensors"
                                         : "the state_dict file saved next to it";
    throw std::runtime_error(fmt::format(
        "{}: this is the training-state file that --save writes for --resume (weights and optimizer state); "
        "give {} instead, or continue the run with dnnc train --resume",
        path, sd));
  }
  std::vector<std::string> warnings;
  const std::string saved_model = meta_or(f, "model"), saved_source = meta_or(f, "source");
  const std::string saved_norm = meta_or(f, "normalize", normalization(m)), norm = normalization(m);
  std::string norm_line;
  if (saved_norm != norm)
    norm_line = fmt::format("input normalization: the checkpoint's model used {}, this one uses {}", shown(saved_norm),
                            shown(norm));
  if (!saved_model.empty() && saved_model != m.name) {
    std::string what = fmt::format("checkpoint of model {}, loaded into model {}",
                                   model_label(saved_model, saved_source), model_label(m.name, m.source_file));
    if (!check.allow_other_model) {
      std::string msg = fmt::format("{}: saved from model {}, not {}", path, model_label(saved_model, saved_source),
                                    model_label(m.name, m.source_file));
      if (!norm_line.empty()) msg += "\n  differs: " + norm_line;
      msg += "\n  evaluate it with the model that trained it, or pass --allow-other-model to load it anyway";
      throw std::runtime_error(msg);
    }
    warnings.push_back(fmt::format("{}: {} (--allow-other-model)", path, what));
  }
  if (!norm_line.empty()) warnings.push_back(fmt::format("{}: {}", path, norm_line));
  return warnings;
}

const std::string& meta(const SafetensorsFile& f, const std::string& path, const std::string& key) {
  auto it = f.metadata.find(key);
  if (it == f.metadata.end())
    throw std::runtime_error(fmt::format("{}: not a dnnc training-state file (metadata '{}' is missing)", path, key));
  return it->second;
}

int64_t meta_int(const SafetensorsFile& f, const std::string& path, const std::string& key) {
  const std::string& s = meta(f, path, key);
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw std::runtime_error(fmt::format("{}: metadata '{}' must be a non-negative integer, found '{}'", path, key, s));
}

void expect_meta(const std::string& path, const std::string& what, const std::string& expected,
                 const std::string& found) {
  if (expected != found)
    throw std::runtime_error(
        fmt::format("{}: cannot resume: the checkpoint's {} is {}, this run's is {}", path, what, found, expected));
}

}  // namespace

NamedTensors state_dict(const ir::Module& m, const ParamStore& params) { return collect(m, params, in_state_dict); }

NamedTensors training_state(const ir::Module& m, const ParamStore& params) { return collect(m, params, any_role); }

void load_state_dict(const ir::Module& m, const NamedTensors& tensors, const std::string& source, ParamStore& params) {
  check_and_load(m, tensors, source, in_state_dict, params);
}

std::vector<std::string> load_state_dict_file(const ir::Module& m, const std::string& path, ParamStore& params,
                                              const StateDictCheck& check) {
  SafetensorsFile f = read_safetensors_file(path);
  std::vector<std::string> warnings = check_state_dict_metadata(m, f, path, check);
  load_state_dict(m, f.tensors, path, params);
  return warnings;
}

std::string training_state_path(const std::string& path) {
  const std::string ext = ".safetensors";
  if (path.size() > ext.size() && path.ends_with(ext)) return path.substr(0, path.size() - ext.size()) + ".train" + ext;
  return path + ".train" + ext;
}

void save_checkpoint(const std::string& path, const ir::Module& m, const ParamStore& params, const TrainPosition& pos,
                     const RunInfo& run, const SaveHooks* hooks) {
  // The training state first: a crash between the two writes leaves a resumable pair.
  auto train_meta = position_metadata(m, pos, "training_state");
  train_meta["batch"] = std::to_string(run.batch);
  train_meta["seed"] = std::to_string(run.seed);
  train_meta["shuffle"] = run.shuffle ? "true" : "false";
  train_meta["optimizer"] = m.train.optimizer.kind;
  write_safetensors(training_state_path(path), training_state(m, params), train_meta, hooks);
  write_safetensors(path, state_dict(m, params), position_metadata(m, pos, "state_dict"), hooks);
}

TrainPosition load_checkpoint(const std::string& path, const ir::Module& m, const RunInfo& run, ParamStore& params) {
  const std::string ext = ".train.safetensors";
  std::string file = path.ends_with(ext) ? path : training_state_path(path);
  SafetensorsFile f = read_safetensors_file(file);
  if (meta(f, file, "format") != kFormat || meta(f, file, "kind") != "training_state")
    throw std::runtime_error(fmt::format("{}: not a dnnc training-state file (format '{}', kind '{}')", file,
                                         meta(f, file, "format"), meta(f, file, "kind")));
  expect_meta(file, "version", kVersion, meta(f, file, "version"));
  expect_meta(file, "model", m.name, meta(f, file, "model"));
  expect_meta(file, "optimizer", m.train.optimizer.kind, meta(f, file, "optimizer"));
  expect_meta(file, "batch size", std::to_string(run.batch), meta(f, file, "batch"));
  expect_meta(file, "seed", std::to_string(run.seed), meta(f, file, "seed"));
  expect_meta(file, "shuffling", run.shuffle ? "true" : "false", meta(f, file, "shuffle"));
  TrainPosition pos{meta_int(f, file, "epoch"), meta_int(f, file, "batch_in_epoch"), meta_int(f, file, "step")};
  check_and_load(m, f.tensors, file, any_role, params);
  return pos;
}

}  // namespace dnnc::runtime
