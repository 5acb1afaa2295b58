// Test helpers: a self-deleting temporary directory and writers of small (possibly broken)
// data files: raw bytes, gzip, IDX and CIFAR-10 records.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dnnc::testing {

/// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  /// path()/rel as a string (parent directories created).
  std::string file(const std::string& rel) const;

 private:
  std::filesystem::path path_;
};

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_bytes(const std::string& path);
std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& bytes);

/// An IDX file: big-endian magic, big-endian u32 dims, then `payload` as is.
std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload);
/// `n` pseudo-random 28x28 images (seeded) and labels i*7 % 10.
std::vector<uint8_t> mnist_pixels(int64_t n, uint32_t seed);
std::vector<uint8_t> mnist_labels(int64_t n);
/// Writes train or t10k images+labels of `n` samples into dir (gzipped if `gz`).
void write_mnist_split(const std::string& dir, bool train, int64_t n, bool gz, uint32_t seed);

}  // namespace dnnc::testing
