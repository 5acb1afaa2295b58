// CIFAR-10 binary loader: locate the batch files, validate sizes and labels.
#include "runtime/data/cifar10.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "ir/check.h"
#include "runtime/data/byte_reader.h"

namespace dnnc::runtime {
namespace {

constexpr int64_t kPixels = 3 * 32 * 32;
// 60,000 records is 184 MB; refuse files far beyond any CIFAR batch.
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 32;

}  // namespace

void append_cifar10_file(Dataset& ds, const std::string& path) {
  DNNC_CHECK((ds.n == 0 || (ds.c == 3 && ds.h == 32 && ds.w == 32)), "appending CIFAR to a non-CIFAR dataset");
  std::vector<uint8_t> bytes = read_plain_file(path, kMaxFileBytes);
  if (bytes.empty() || bytes.size() % kCifarRecordBytes != 0) {
    throw std::runtime_error(fmt::format(
        "{}: size {} bytes is not a non-zero multiple of the {}-byte CIFAR-10 record "
        "({} whole records and {} bytes left over)",
        path, bytes.size(), kCifarRecordBytes, bytes.size() / kCifarRecordBytes, bytes.size() % kCifarRecordBytes));
  }
  const int64_t records = static_cast<int64_t>(bytes.size()) / kCifarRecordBytes;
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t label = bytes[r * kCifarRecordBytes];
    if (label >= ds.num_classes)
      throw std::runtime_error(fmt::format("{}: record {} (byte offset {}) has label {}, not a class in 0..{}", path, r,
                                           r * kCifarRecordBytes, label, ds.num_classes - 1));
  }
  ds.c = 3;
  ds.h = 32;
  ds.w = 32;
  const size_t old_pixels = ds.images.size();
  ds.images.resize(old_pixels + records * kPixels);
  ds.labels.reserve(ds.labels.size() + records);
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t* rec = bytes.data() + r * kCifarRecordBytes;
    ds.labels.push_back(rec[0]);
    std::memcpy(ds.images.data() + old_pixels + r * kPixels, rec + 1, kPixels);
  }
  ds.n += records;
}

Dataset load_cifar10(const std::string& dir, bool train) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  if (train) {
    for (int i = 1; i <= 5; ++i) names.push_back(fmt::format("data_batch_{}.bin", i));
  } else {
    names.push_back("test_batch.bin");
  }
  const std::vector<fs::path> places = {fs::path(dir), fs::path(dir) / "cifar-10-batches-bin"};
  for (const fs::path& place : places) {
    std::vector<std::string> found;
    for (const std::string& name : names) {
      std::error_code ec;
      if (fs::is_regular_file(place / name, ec)) found.push_back((place / name).string());
    }
    if (found.empty()) continue;
    Dataset ds;
    for (const std::string& path : found) append_cifar10_file(ds, path);
    return ds;
  }
  std::vector<std::string> searched;
  for (const fs::path& place : places) searched.push_back(place.string());
  throw std::runtime_error(fmt::format("CIFAR-10 {} split not found: none of {} in {}", train ? "training" : "test",
                                       fmt::join(names, ", "), fmt::join(searched, " or ")));
}

}  // namespace dnnc::runtime
