// Synthetic CIFAR-10 generator: fixed class patterns plus seeded per-image variation.
#include "runtime/data/synth_cifar.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/data/cifar10.h"

namespace dnnc::runtime {
namespace {

// xoshiro256** seeded by splitmix64: small, fast and the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& s : s_) s = splitmix(seed);
  }
  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal(double mean, double stddev) {  // Box-Muller, both values used
    if (has_spare_) {
      has_spare_ = false;
      return mean + stddev * spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2 * std::numbers::pi * u2);
    has_spare_ = true;
    return mean + stddev * r * std::cos(2 * std::numbers::pi * u2);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(uniform() * static_cast<double>(n)); }

  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_{};
  double spare_ = 0;
  bool has_spare_ = false;
};

constexpr int kSide = 32;
constexpr int kClasses = 10;

struct ClassPattern {
  double angle, freq;            // grating orientation (radians) and spatial frequency (rad/pixel)
  std::array<double, 3> tint;    // colour, per channel
  double blob_y, blob_x;         // Gaussian blob centre
};

// The class patterns: fixed, independent of the data seed, so every file shares them.
std::array<ClassPattern, kClasses> class_patterns() {
  const std::array<double, kClasses> cycles = {2, 3, 4, 2.5, 3.5, 2, 3, 4, 2.5, 3.5};
  Rng tint_rng(12345), blob_rng(54321);
  std::array<ClassPattern, kClasses> p{};
  for (int c = 0; c < kClasses; ++c) {
    p[c].angle = c * 18.0 * std::numbers::pi / 180.0;
    p[c].freq = cycles[c] * 2 * std::numbers::pi / kSide;
    for (double& t : p[c].tint) t = tint_rng.uniform(0.3, 1.0);
    p[c].blob_y = blob_rng.uniform(8, 24);
    p[c].blob_x = blob_rng.uniform(8, 24);
  }
  return p;
}

void draw_image(const ClassPattern& p, Rng& rng, uint8_t* out /* (3, 32, 32) */) {
  const double th = p.angle + rng.normal(0, 0.08);
  const double phase = rng.uniform(0, 2 * std::numbers::pi);
  const double by = p.blob_y + rng.normal(0, 3);
  const double bx = p.blob_x + rng.normal(0, 3);
  std::array<double, 3> col;
  for (int ch = 0; ch < 3; ++ch) col[ch] = 0.6 * p.tint[ch] + 0.4 * rng.uniform(0.3, 1.0);
  const double contrast = rng.uniform(30, 70);
  const double bright = rng.uniform(80, 160);
  const double ct = std::cos(th), st = std::sin(th);
  std::array<double, kSide * kSide> pattern;
  for (int y = 0; y < kSide; ++y) {
    for (int x = 0; x < kSide; ++x) {
      const double g = std::sin(p.freq * (x * ct + y * st) + phase);
      const double b = std::exp(-((y - by) * (y - by) + (x - bx) * (x - bx)) / (2 * 6.0 * 6.0));
      pattern[y * kSide + x] = 0.7 * g + 0.6 * b;
    }
  }
  for (int ch = 0; ch < 3; ++ch) {
    for (int i = 0; i < kSide * kSide; ++i) {
      const double v = bright + contrast * pattern[i] * col[ch] * 1.5 + rng.normal(0, 25);
      *out++ = static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0, 255.0));
    }
  }
}

}  // namespace

Dataset synthetic_cifar10(int64_t n, uint64_t seed) {
  if (n < 0) throw std::invalid_argument(fmt::format("synthetic CIFAR-10: sample count {} is negative", n));
  static const std::array<ClassPattern, kClasses> patterns = class_patterns();
  Rng rng(seed);
  Dataset ds;
  ds.n = n;
  ds.c = 3;
  ds.h = kSide;
  ds.w = kSide;
  ds.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ds.labels[i] = i % kClasses;
  for (int64_t i = n - 1; i > 0; --i) std::swap(ds.labels[i], ds.labels[rng.below(i + 1)]);  // Fisher-Yates
  ds.images.resize(static_cast<size_t>(n * ds.image_size()));
  for (int64_t i = 0; i < n; ++i) draw_image(patterns[ds.labels[i]], rng, ds.images.data() + i * ds.image_size());
  return ds;
}

void write_cifar10_file(const std::string& path, const Dataset& ds) {
  if (ds.c != 3 || ds.h != kSide || ds.w != kSide)
    throw std::invalid_argument(fmt::format("{}: CIFAR-10 records need 3x32x32 images, dataset has {}x{}x{}", path,
                                            ds.c, ds.h, ds.w));
  std::vector<char> bytes(static_cast<size_t>(ds.n * kCifarRecordBytes));
  for (int64_t i = 0; i < ds.n; ++i) {
    char* rec = bytes.data() + i * kCifarRecordBytes;
    rec[0] = static_cast<char>(ds.labels[i]);
    std::memcpy(rec + 1, ds.images.data() + i * ds.image_size(), static_cast<size_t>(ds.image_size()));
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write the CIFAR-10 file", path));
}

void write_synthetic_cifar10(const std::string& dir, int64_t n_train_per_batch, int64_t n_test, uint64_t seed,
                             int n_train_batches) {
  if (n_train_per_batch < 1 || n_test < 1)
    throw std::invalid_argument(fmt::format("synthetic CIFAR-10: need at least 1 record per file, got {} train, {} test",
                                            n_train_per_batch, n_test));
  if (n_train_batches < 1 || n_train_batches > 5)
    throw std::invalid_argument(
        fmt::format("synthetic CIFAR-10: {} training batches requested; CIFAR-10 has 1 to 5", n_train_batches));
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("{}: cannot create directory: {}", dir, ec.message()));
  uint64_t stream = seed;  // one seed per file, drawn from the user's seed
  for (int k = 1; k <= n_train_batches; ++k) {
    const uint64_t file_seed = Rng::splitmix(stream);
    write_cifar10_file((fs::path(dir) / fmt::format("data_batch_{}.bin", k)).string(),
                       synthetic_cifar10(n_train_per_batch, file_seed));
  }
  // The test file's seed does not depend on how many training batches were written.
  uint64_t test_stream = seed ^ 0x5445535442415443ull;
  write_cifar10_file((fs::path(dir) / "test_batch.bin").string(), synthetic_cifar10(n_test, Rng::splitmix(test_stream)));
  const std::string meta = (fs::path(dir) / "batches.meta.txt").string();
  std::ofstream f(meta, std::ios::trunc);
  f << "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n";
  f.close();
  if (!f) throw std::runtime_error(fmt::format("{}: cannot write", meta));
}

}  // namespace dnnc::runtime
