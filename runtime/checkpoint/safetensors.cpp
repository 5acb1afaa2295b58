// safetensors reader (strict validation, tensors read straight into their buffers) and writer.
#include "runtime/checkpoint/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "runtime/checkpoint/atomic_file.h"

namespace dnnc::runtime {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; so must the host be");

namespace {

using nlohmann::json;

struct Entry {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

const char* safetensors_dtype(ir::DType t) { return t == ir::DType::f32 ? "F32" : "I64"; }

// A valid header nests 3 deep (header -> entry -> shape). Deeper ones are refused right after
// parsing, before anything recursive (dump(), for messages) walks them: a hostile input run
// through fuzz_safetensors (metadata nested 200,000 deep) overflowed the stack in dump().
constexpr int kMaxHeaderDepth = 8;

// `v` as compact JSON for an error message, at most 60 characters.
std::string brief(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

// Parses one tensor entry of the header; `fail` builds the error for this file.
template <typename Fail>
Entry parse_entry(const std::string& name, const json& v, Fail fail) {
  auto bad = [&](const std::string& what) { return fail(fmt::format("tensor '{}': {}", name, what)); };
  if (!v.is_object()) throw bad("entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) throw bad(fmt::format("entry lacks \"{}\"", key));
  Entry e;
  e.name = name;
  const json& dtype = v.at("dtype");
  if (!dtype.is_string()) throw bad("dtype is not a string");
  const std::string d = dtype.get<std::string>();
  if (d == "F32") {
    e.dtype = ir::DType::f32;
  } else if (d == "I64") {
    e.dtype = ir::DType::i64;
  } else {
    throw bad(fmt::format("dtype {} is not supported (dnnc reads F32 and I64)", d));
  }
  const json& shape = v.at("shape");
  if (!shape.is_array()) throw bad("shape is not a list");
  for (const json& s : shape) {
    if (!s.is_number_unsigned()) throw bad(fmt::format("shape {} holds something other than sizes >= 0", brief(shape)));
    // A size past INT64_MAX would wrap negative (next to a 0 it needs no bytes at all).
    if (s.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      throw bad(fmt::format("shape {} holds a size larger than 2^63 - 1", brief(shape)));
    e.shape.push_back(static_cast<int64_t>(s.get<uint64_t>()));
  }
  const json& off = v.at("data_offsets");
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw bad(fmt::format("data_offsets {} is not [begin, end] with begin, end >= 0", brief(off)));
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  if (e.end < e.begin) throw bad(fmt::format("data_offsets [{}, {}] end before they begin", e.begin, e.end));
  uint64_t bytes = e.dtype == ir::DType::i64 ? 8 : 4;
  for (int64_t s : e.shape) {
    if (s != 0 && bytes > (uint64_t{1} << 62) / static_cast<uint64_t>(s))
      throw bad(fmt::format("shape {} is too large", brief(shape)));
    bytes *= static_cast<uint64_t>(s);
  }
  if (bytes != e.end - e.begin)
    throw bad(fmt::format("shape {} of {} needs {} bytes, but data_offsets [{}, {}] hold {}", brief(shape), d, bytes,
                          e.begin, e.end, e.end - e.begin));
  return e;
}

}  // namespace

SafetensorsFile read_safetensors_file(const std::string& path) {
  auto fail = [&](const std::string& what) { return std::runtime_error(fmt::format("{}: {}", path, what)); };
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw fail(fmt::format("cannot open: {}", ec.message()));
  FilePtr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw fail(fmt::format("cannot open: {}", std::strerror(errno)));
  if (file_size < 8) throw fail(fmt::format("{} bytes, too short for the 8-byte header length", file_size));

  uint8_t len_bytes[8];
  if (std::fread(len_bytes, 1, 8, f.get()) != 8) throw fail("read error in the header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len > file_size - 8)
    throw fail(fmt::format("header length {} runs past the end of the file ({} bytes)", header_len, file_size));
  if (header_len > kMaxSafetensorsHeader)
    throw fail(fmt::format("header length {} exceeds the {}-byte limit", header_len, kMaxSafetensorsHeader));
  std::string text(static_cast<size_t>(header_len), '\0');
  if (header_len && std::fread(text.data(), 1, text.size(), f.get()) != text.size())
    throw fail("read error in the header");

  std::set<std::string> seen;
  std::string duplicate;
  int max_depth = 0;
  auto on_key = [&](int depth, json::parse_event_t event, json& parsed) {
    max_depth = std::max(max_depth, depth);
    if (event == json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(text, on_key);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large for any type
    throw fail(fmt::format("header is not valid JSON: {}", e.what()));
  }
  if (max_depth > kMaxHeaderDepth)
    throw fail(fmt::format("header nests JSON {} levels deep; a safetensors header needs 3 (at most {} accepted)",
                           max_depth, kMaxHeaderDepth));
  if (!header.is_object()) throw fail(fmt::format("header is a JSON {}, not an object", header.type_name()));
  if (!duplicate.empty()) throw fail(fmt::format("tensor '{}' appears twice in the header", duplicate));

  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) throw fail("__metadata__ is not a JSON object");
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) throw fail(fmt::format("__metadata__ entry '{}' is not a string: {}", k, brief(s)));
        out.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(name, v, fail));
  }

  // The entries must tile the data buffer exactly: no gaps, no overlaps, nothing past the end.
  const uint64_t buffer = file_size - 8 - header_len;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  uint64_t pos = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.end > buffer)
      throw fail(fmt::format("tensor '{}': data_offsets [{}, {}] run past the end of the {}-byte data", e.name, e.begin,
                             e.end, buffer));
    if (e.begin < pos)
      throw fail(fmt::format("tensor '{}' (bytes [{}, {})) overlaps tensor '{}' (bytes [{}, {}))", e.name, e.begin,
                             e.end, prev->name, prev->begin, prev->end));
    if (e.begin > pos)
      throw fail(fmt::format("data bytes [{}, {}) before tensor '{}' belong to no tensor", pos, e.begin, e.name));
    pos = e.end;
    prev = &e;
  }
  if (pos != buffer)
    throw fail(fmt::format("data bytes [{}, {}) after the last tensor belong to no tensor", pos, buffer));

  for (const Entry& e : entries) {
    Tensor t(e.dtype, e.shape);
    if (t.nbytes() && std::fread(t.data(), 1, t.nbytes(), f.get()) != t.nbytes())
      throw fail(fmt::format("tensor '{}': read error", e.name));
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

NamedTensors read_safetensors(const std::string& path) { return read_safetensors_file(path).tensors; }

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata, const SaveHooks* hooks) {
  auto fail = [&](const std::string& what) { return std::runtime_error(fmt::format("{}: {}", path, what)); };
  std::vector<const std::pair<std::string, Tensor>*> order;
  for (const auto& nt : tensors) {
    if (nt.first.empty()) throw fail("a tensor has an empty name");
    if (nt.first == "__metadata__") throw fail("'__metadata__' is reserved and cannot name a tensor");
    if (nt.second.empty()) throw fail(fmt::format("tensor '{}' holds no data", nt.first));
    order.push_back(&nt);
  }
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i]->first == order[i - 1]->first) throw fail(fmt::format("tensor '{}' given twice", order[i]->first));

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto* nt : order) {
    const Tensor& t = nt->second;
    header[nt->first] = {
        {"dtype", safetensors_dtype(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N is a multiple of 8: data starts aligned
  uint8_t len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));

  AtomicFile out(path);
  out.write(len_bytes, 8);
  out.write(text.data(), text.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == order.size() / 2 && hooks && hooks->halfway) hooks->halfway();
    out.write(order[i]->second.data(), order[i]->second.nbytes());
  }
  out.commit();
}

}  // namespace dnnc::runtime
