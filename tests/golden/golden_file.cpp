// Golden file loading: safetensors via runtime/checkpoint, the format/version check, metadata JSON.
#include "golden_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "runtime/checkpoint/safetensors.h"

namespace dnnc::golden {

namespace fs = std::filesystem;

std::string source_dir() { return DNNC_SOURCE_DIR; }

std::vector<std::string> list_golden_files(const std::string& sub) {
  std::vector<std::string> out;
  fs::path dir = fs::path(source_dir()) / "tests" / "golden" / sub;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".safetensors") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string display_path(const std::string& path) {
  std::string root = source_dir() + "/";
  return path.rfind(root, 0) == 0 ? path.substr(root.size()) : path;
}

std::string case_name(const std::string& path) { return fs::path(path).stem().string(); }

std::string version_problem(const std::string& path, const std::map<std::string, std::string>& metadata) {
  auto get = [&](const char* key) {
    auto it = metadata.find(key);
    return it == metadata.end() ? std::string("(none)") : it->second;
  };
  std::string format = get("format"), version = get("version");
  if (format != kGoldenFormat)
    return fmt::format("golden file {} has format {}, expected {}: regenerate with {}", display_path(path), format,
                       kGoldenFormat, kRegenerate);
  if (version != kGoldenVersion)
    return fmt::format("golden file {} has version {}, expected {}: regenerate with {}", display_path(path), version,
                       kGoldenVersion, kRegenerate);
  return "";
}

const runtime::Tensor& GoldenFile::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    throw std::runtime_error(fmt::format("golden file {} has no tensor '{}'", display_path(path), name));
  return it->second;
}

const std::string& GoldenFile::meta(const std::string& key) const {
  auto it = metadata.find(key);
  if (it == metadata.end())
    throw std::runtime_error(fmt::format("golden file {} has no metadata key '{}'", display_path(path), key));
  return it->second;
}

nlohmann::json GoldenFile::meta_json(const std::string& key) const {
  const std::string& text = meta(key);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(
        fmt::format("golden file {}: metadata '{}' is not JSON ({}): {}", display_path(path), key, text, e.what()));
  }
}

std::map<std::string, std::string> read_golden_metadata(const std::string& path) {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error(
        fmt::format("golden file {} {}: regenerate with {}", display_path(path), why, kRegenerate));
  };
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot be opened");
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8)) fail("is shorter than 8 bytes");
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | len_bytes[i];
  std::error_code ec;
  uintmax_t size = fs::file_size(path, ec);
  if (ec || len > runtime::kMaxSafetensorsHeader || len > size - 8)
    fail(fmt::format("has an impossible header length {}", len));
  std::string header(static_cast<size_t>(len), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(len))) fail("ends inside its header");
  nlohmann::json j = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) fail("has a header that is not a JSON object");
  std::map<std::string, std::string> metadata;
  if (auto it = j.find("__metadata__"); it != j.end() && it->is_object())
    for (const auto& [key, value] : it->items())
      if (value.is_string()) metadata[key] = value.get<std::string>();
  return metadata;
}

GoldenFile load_golden(const std::string& path) {
  runtime::SafetensorsFile file;
  try {
    file = runtime::read_safetensors_file(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("golden file {} cannot be read ({}): regenerate with {}", display_path(path),
                                         e.what(), kRegenerate));
  }
  if (std::string problem = version_problem(path, file.metadata); !problem.empty()) throw std::runtime_error(problem);
  GoldenFile g;
  g.path = path;
  g.metadata = std::move(file.metadata);
  for (auto& [name, t] : file.tensors) g.tensors.emplace(name, std::move(t));
  return g;
}

ir::AttrValue json_to_attr(const nlohmann::json& v, const std::string& what) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    bool all_int = std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_number_integer(); });
    bool all_num = std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_number(); });
    if (all_int) return v.get<std::vector<int64_t>>();
    if (all_num) return v.get<std::vector<double>>();
  }
  throw std::runtime_error(fmt::format("{}: unsupported attribute value {}", what, v.dump()));
}

ir::Attrs json_to_attrs(const nlohmann::json& obj, const std::string& what) {
  if (!obj.is_object()) throw std::runtime_error(fmt::format("{}: expected a JSON object, found {}", what, obj.dump()));
  ir::Attrs attrs;
  for (const auto& [key, value] : obj.items()) attrs[key] = json_to_attr(value, what + "." + key);
  return attrs;
}

}  // namespace dnnc::golden
