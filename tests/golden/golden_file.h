// Loading the PyTorch golden files of tests/golden (README.md): the safetensors reader plus the
// format/version check and typed access to tensors and JSON metadata, with errors naming the file.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/attrs.h"
#include "runtime/tensor.h"

namespace dnnc::golden {

inline constexpr const char* kGoldenFormat = "dnnc-golden";
inline constexpr const char* kGoldenVersion = "1";
inline constexpr const char* kRegenerate = "/usr/bin/python3 tests/golden/make_golden.py";

/// The repository root (the DNNC_SOURCE_DIR the tests were built with).
std::string source_dir();

/// Absolute paths of every `*.safetensors` in tests/golden/<sub> ("ops" or "models"), sorted.
/// Empty if the folder is missing.
std::vector<std::string> list_golden_files(const std::string& sub);

/// `path` relative to the repository root when it lies inside it (for messages).
std::string display_path(const std::string& path);

/// The file's base name without `.safetensors` ("conv2d_stride2").
std::string case_name(const std::string& path);

/// "" if `metadata` says format dnnc-golden and version 1; otherwise the message the tests
/// print: `golden file X has version V, expected 1: regenerate with <kRegenerate>` (or the
/// same for a wrong or missing format).
std::string version_problem(const std::string& path, const std::map<std::string, std::string>& metadata);

struct GoldenFile {
  std::string path;
  std::map<std::string, runtime::Tensor> tensors;
  std::map<std::string, std::string> metadata;

  bool has(const std::string& name) const { return tensors.count(name) != 0; }
  /// Throws std::runtime_error naming the file and the tensor if it is absent.
  const runtime::Tensor& tensor(const std::string& name) const;
  /// Throws std::runtime_error naming the file and the key if it is absent.
  const std::string& meta(const std::string& key) const;
  /// meta(key) parsed as JSON. Throws std::runtime_error naming the file and key if it is not JSON.
  nlohmann::json meta_json(const std::string& key) const;
};

/// Only the `__metadata__` of a safetensors file, from its JSON header (no tensor data is read),
/// for registering one test per trajectory run cheaply. Throws std::runtime_error naming the file
/// if it cannot be read, its header length is impossible or the header is not a JSON object.
std::map<std::string, std::string> read_golden_metadata(const std::string& path);

/// Reads a golden file and checks its format and version. Throws std::runtime_error with the
/// version_problem() message on a mismatch, and with the regeneration command if the file cannot
/// be read.
GoldenFile load_golden(const std::string& path);

/// A JSON value as an IR attribute: integers -> int, other numbers -> float, bools, strings,
/// arrays of integers -> ints (also the empty array), arrays of numbers -> floats. Throws
/// std::runtime_error naming `what` for anything else (objects, nulls, mixed arrays).
ir::AttrValue json_to_attr(const nlohmann::json& v, const std::string& what);

/// A JSON object of attributes (golden `attrs` / `optimizer.<run>` metadata) as ir::Attrs.
/// Throws std::runtime_error naming `what` if it is not an object or a value is unsupported.
ir::Attrs json_to_attrs(const nlohmann::json& obj, const std::string& what);

}  // namespace dnnc::golden
