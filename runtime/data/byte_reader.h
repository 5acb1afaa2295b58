// Sequential reading of data files, plain or gzip-compressed (recognized by the gzip magic
// bytes 1f 8b, not by the file name), with errors that name the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dnnc::runtime {

class ByteReader {
 public:
  /// Opens `path`. Throws std::runtime_error naming the file if it cannot be opened.
  explicit ByteReader(std::string path);
  ~ByteReader();
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  const std::string& path() const { return path_; }
  /// True if the file is gzip-compressed; read() then returns the decompressed bytes.
  bool gzip() const { return gzip_; }
  /// Size of the file on disk (the compressed size for gzip files).
  uint64_t file_size() const { return file_size_; }

  /// Reads up to `n` bytes into `dst`; returns how many were read, fewer than `n` only at the
  /// end of the data. Throws std::runtime_error naming the file on an I/O or gzip error.
  size_t read(void* dst, size_t n);
  /// Reads and discards the rest of the data, stopping after `limit` bytes; returns the count.
  uint64_t skip_rest(uint64_t limit);

 private:
  std::string path_;
  bool gzip_ = false;
  uint64_t file_size_ = 0;
  void* gz_ = nullptr;  // gzFile; zlib reads plain files too, transparently
};

/// Reads `n` bytes at the reader's position into a new buffer grown as data arrives, so a
/// hostile size claim cannot allocate more than the file really holds. Returns fewer than `n`
/// bytes only at the end of the data. Throws like ByteReader::read.
std::vector<uint8_t> read_up_to(ByteReader& r, uint64_t n);

/// The whole content of an uncompressed file. Throws std::runtime_error naming the file if it
/// cannot be opened or read, or if it is larger than `max_bytes`.
std::vector<uint8_t> read_plain_file(const std::string& path, uint64_t max_bytes);

}  // namespace dnnc::runtime
