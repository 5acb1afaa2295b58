// Synthetic CIFAR-10: real format, deterministic per seed, class-balanced, learnable.
#include <catch2/catch.hpp>

#include <filesystem>

#include "runtime/data/cifar10.h"
#include "runtime/data/dataset.h"
#include "runtime/data/synth_cifar.h"
#include "tests/data/test_files.h"

using namespace dnnc::runtime;
using namespace dnnc::testing;

TEST_CASE("write_synthetic_cifar10 writes files load_cifar10 reads", "[synth]") {
  TempDir t;
  write_synthetic_cifar10(t.path().string(), 30, 20, 7, 2);
  CHECK(std::filesystem::file_size(t.path() / "data_batch_1.bin") == 30 * 3073);
  CHECK(std::filesystem::file_size(t.path() / "data_batch_2.bin") == 30 * 3073);
  CHECK_FALSE(std::filesystem::exists(t.path() / "data_batch_3.bin"));
  Dataset train = load_cifar10(t.path().string(), true);
  Dataset test = load_cifar10(t.path().string(), false);
  CHECK(train.n == 60);
  CHECK(test.n == 20);
  CHECK(train.c == 3);
  // The two training batches come from different seed streams.
  CHECK(std::vector<uint8_t>(train.images.begin(), train.images.begin() + 30 * 3072) !=
        std::vector<uint8_t>(train.images.begin() + 30 * 3072, train.images.end()));
}

TEST_CASE("write_synthetic_cifar10 is deterministic for a seed", "[synth]") {
  TempDir a, b, c;
  write_synthetic_cifar10(a.path().string(), 20, 10, 42);
  write_synthetic_cifar10(b.path().string(), 20, 10, 42);
  write_synthetic_cifar10(c.path().string(), 20, 10, 43);
  for (const char* name : {"data_batch_1.bin", "test_batch.bin"}) {
    auto fa = read_bytes((a.path() / name).string());
    CHECK(fa == read_bytes((b.path() / name).string()));
    CHECK(fa != read_bytes((c.path() / name).string()));
  }
}

TEST_CASE("synthetic CIFAR-10 labels are balanced across classes", "[synth]") {
  for (int64_t n : {100, 105}) {
    Dataset ds = synthetic_cifar10(n, 3);
    auto counts = class_counts(ds);
    for (int64_t k : counts) {
      CHECK(k >= n / 10);
      CHECK(k <= n / 10 + 1);
    }
    // Shuffled, not in class order.
    CHECK(ds.labels != std::vector<int64_t>(ds.labels.size(), ds.labels[0]));
    bool sorted_by_cycle = true;
    for (int64_t i = 0; i < n; ++i) sorted_by_cycle &= ds.labels[i] == i % 10;
    CHECK_FALSE(sorted_by_cycle);
  }
}

TEST_CASE("synthetic CIFAR-10 is learnable: nearest class mean beats chance by far", "[synth]") {
  Dataset train = synthetic_cifar10(2000, 11);
  Dataset test = synthetic_cifar10(500, 12);
  const int64_t d = train.image_size();
  std::vector<double> mean(10 * d, 0.0);
  auto counts = class_counts(train);
  for (int64_t i = 0; i < train.n; ++i)
    for (int64_t p = 0; p < d; ++p) mean[train.labels[i] * d + p] += train.images[i * d + p];
  for (int k = 0; k < 10; ++k)
    for (int64_t p = 0; p < d; ++p) mean[k * d + p] /= static_cast<double>(counts[k]);
  int64_t correct = 0;
  for (int64_t i = 0; i < test.n; ++i) {
    int best = -1;
    double best_dist = 0;
    for (int k = 0; k < 10; ++k) {
      double dist = 0;
      for (int64_t p = 0; p < d; ++p) {
        const double diff = test.images[i * d + p] - mean[k * d + p];
        dist += diff * diff;
      }
      if (best < 0 || dist < best_dist) best = k, best_dist = dist;
    }
    correct += best == test.labels[i];
  }
  const double acc = static_cast<double>(correct) / static_cast<double>(test.n);
  INFO("nearest-class-mean accuracy " << acc);
  CHECK(acc > 0.25);  // chance is 0.1; a small CNN reaches > 0.9 (docs/data.md)
}

TEST_CASE("write_synthetic_cifar10 rejects bad counts", "[synth]") {
  TempDir t;
  CHECK_THROWS_AS(write_synthetic_cifar10(t.path().string(), 0, 10, 1), std::invalid_argument);
  CHECK_THROWS_AS(write_synthetic_cifar10(t.path().string(), 10, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(write_synthetic_cifar10(t.path().string(), 10, 10, 1, 6), std::invalid_argument);
  CHECK_THROWS_AS(synthetic_cifar10(-1, 1), std::invalid_argument);
}
