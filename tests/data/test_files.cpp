// Temporary directories and small data-file writers for the data and checkpoint tests.
#include "tests/data/test_files.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>

namespace dnnc::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dnnc-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::file(const std::string& rel) const {
  std::filesystem::path p = path_ / rel;
  std::filesystem::create_directories(p.parent_path());
  return p.string();
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& bytes) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16 /* gzip wrapper */, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&zs, bytes.size()) + 64);
  zs.next_in = const_cast<Bytef*>(bytes.data());
  zs.avail_in = static_cast<uInt>(bytes.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(zs.total_out);
  return out;
}

void write_gzip(const std::string& path, const std::vector<uint8_t>& bytes) { write_bytes(path, gzip_bytes(bytes)); }

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

std::vector<uint8_t> mnist_pixels(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> px(static_cast<size_t>(n * 28 * 28));
  for (uint8_t& p : px) p = static_cast<uint8_t>(rng() & 0xff);
  return px;
}

std::vector<uint8_t> mnist_labels(int64_t n) {
  std::vector<uint8_t> l(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) l[i] = static_cast<uint8_t>(i * 7 % 10);
  return l;
}

void write_mnist_split(const std::string& dir, bool train, int64_t n, bool gz, uint32_t seed) {
  const std::string prefix = std::string(dir) + "/" + (train ? "train" : "t10k");
  const std::string suffix = gz ? ".gz" : "";
  auto images = idx_bytes(0x803, {static_cast<uint32_t>(n), 28, 28}, mnist_pixels(n, seed));
  auto labels = idx_bytes(0x801, {static_cast<uint32_t>(n)}, mnist_labels(n));
  std::filesystem::create_directories(dir);
  if (gz) {
    write_gzip(prefix + "-images-idx3-ubyte" + suffix, images);
    write_gzip(prefix + "-labels-idx1-ubyte" + suffix, labels);
  } else {
    write_bytes(prefix + "-images-idx3-ubyte", images);
    write_bytes(prefix + "-labels-idx1-ubyte", labels);
  }
}

}  // namespace dnnc::testing
