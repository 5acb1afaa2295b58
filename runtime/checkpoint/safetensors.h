// Checkpoints in the safetensors format (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets}, "__metadata__":
// {str: str}}, then the tensor bytes. dnnc reads and writes F32 and I64 tensors.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace dnnc::runtime {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsFile {
  NamedTensors tensors;                         // in the order of their data in the file
  std::map<std::string, std::string> metadata;  // the "__metadata__" entries
};

/// The largest JSON header accepted (the safetensors library's own limit).
inline constexpr uint64_t kMaxSafetensorsHeader = 100u << 20;

/// Reads a safetensors file with its metadata. Throws std::runtime_error naming the file (and
/// the tensor, where one is at fault) if it cannot be read, is shorter than 8 bytes, its header
/// length runs past the end of the file or exceeds kMaxSafetensorsHeader, the header is not a
/// JSON object, a name appears twice, an entry is malformed, a dtype is not F32 or I64, shape x
/// dtype size differs from the entry's byte length, offsets run past the data, overlap, or leave
/// bytes that belong to no tensor, or metadata values are not strings.
SafetensorsFile read_safetensors_file(const std::string& path);

/// read_safetensors_file(path).tensors.
NamedTensors read_safetensors(const std::string& path);

/// Writes `tensors` (F32 or I64; data laid out in name order) and `metadata` to `path`
/// atomically: a temporary file `path`.tmp.<pid> is written, fsynced and renamed over `path`,
/// then the directory is fsynced, so a crash leaves either the old file or the new one. The
/// header is padded with spaces so the data starts 8-byte aligned. Throws std::runtime_error
/// naming the file if a name is empty, repeated or "__metadata__", a tensor holds no data, or
/// the file cannot be written (the old file is then untouched).
/// `hooks` is the test seam (fault injection, tests/trainer/fault_test.cpp): nullptr in use.
struct SaveHooks {
  std::function<void()> halfway;  // called halfway through the tensor data, before the rest
};
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {}, const SaveHooks* hooks = nullptr);

}  // namespace dnnc::runtime
