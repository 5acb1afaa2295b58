// Plain/gzip file reading on top of zlib's gz* API, which reads uncompressed files unchanged.
#include "runtime/data/byte_reader.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace dnnc::runtime {
namespace {

constexpr size_t kChunk = size_t{1} << 20;

std::runtime_error io_error(const std::string& path, const std::string& what) {
  return std::runtime_error(fmt::format("{}: {}", path, what));
}

}  // namespace

ByteReader::ByteReader(std::string path) : path_(std::move(path)) {
  std::FILE* f = std::fopen(path_.c_str(), "rb");
  if (!f) throw io_error(path_, fmt::format("cannot open: {}", std::strerror(errno)));
  unsigned char magic[2] = {0, 0};
  size_t got = std::fread(magic, 1, 2, f);
  std::fclose(f);
  gzip_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  std::error_code ec;
  file_size_ = std::filesystem::file_size(path_, ec);
  if (ec) throw io_error(path_, fmt::format("cannot stat: {}", ec.message()));
  gz_ = gzopen(path_.c_str(), "rb");
  if (!gz_) throw io_error(path_, "cannot open");
  gzbuffer(static_cast<gzFile>(gz_), 1u << 18);
}

ByteReader::~ByteReader() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

size_t ByteReader::read(void* dst, size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  size_t total = 0;
  while (total < n) {
    unsigned want = static_cast<unsigned>(std::min(n - total, kChunk));
    int got = gzread(static_cast<gzFile>(gz_), out + total, want);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(static_cast<gzFile>(gz_), &code);
      throw io_error(path_, fmt::format("{} error: {}", gzip_ ? "gzip" : "read", msg ? msg : "unknown"));
    }
    if (got == 0) {
      // zlib reports a gzip stream cut short as end of data plus an error state.
      int code = 0;
      const char* msg = gzerror(static_cast<gzFile>(gz_), &code);
      if (code != Z_OK) throw io_error(path_, fmt::format("gzip error: {}", msg ? msg : "unknown"));
      break;
    }
    total += static_cast<size_t>(got);
  }
  return total;
}

uint64_t ByteReader::skip_rest(uint64_t limit) {
  std::vector<unsigned char> buf(std::min<uint64_t>(limit, kChunk) + 1);
  uint64_t total = 0;
  while (total < limit) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(limit - total, buf.size()));
    size_t got = read(buf.data(), want);
    total += got;
    if (got < want) break;
  }
  return total;
}

std::vector<uint8_t> read_up_to(ByteReader& r, uint64_t n) {
  std::vector<uint8_t> data;
  // A plain file's size is known: reserve only if the file really holds that much.
  if (!r.gzip() && n <= r.file_size()) data.reserve(static_cast<size_t>(n));
  while (data.size() < n) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - data.size(), kChunk));
    size_t old = data.size();
    data.resize(old + chunk);
    size_t got = r.read(data.data() + old, chunk);
    data.resize(old + got);
    if (got < chunk) break;
  }
  return data;
}

std::vector<uint8_t> read_plain_file(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw io_error(path, fmt::format("cannot open: {}", ec.message()));
  if (size > max_bytes)
    throw io_error(path, fmt::format("file is {} bytes, more than the limit of {} bytes", size, max_bytes));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw io_error(path, fmt::format("cannot open: {}", std::strerror(errno)));
  std::vector<uint8_t> data(static_cast<size_t>(size));
  size_t got = size ? std::fread(data.data(), 1, data.size(), f) : 0;
  bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err || got != data.size())
    throw io_error(path, fmt::format("read error: expected {} bytes, read {}", size, got));
  return data;
}

}  // namespace dnnc::runtime
