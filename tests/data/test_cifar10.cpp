// CIFAR-10 binary loader: record layout, batch order, directory layouts, validation errors.
#include <catch2/catch.hpp>

#include <filesystem>

#include "runtime/data/cifar10.h"
#include "tests/data/test_files.h"

using dnnc::runtime::Dataset;
using dnnc::runtime::load_cifar10;
using namespace dnnc::testing;
using Catch::Matchers::Contains;

namespace {

// `n` records; record r has label (first_label + r) % 10 and pixel p = (r*13 + p + salt) % 256.
std::vector<uint8_t> records(int64_t n, int first_label, int salt) {
  std::vector<uint8_t> out;
  for (int64_t r = 0; r < n; ++r) {
    out.push_back(static_cast<uint8_t>((first_label + r) % 10));
    for (int p = 0; p < 3072; ++p) out.push_back(static_cast<uint8_t>((r * 13 + p + salt) % 256));
  }
  return out;
}

}  // namespace

TEST_CASE("load_cifar10 reads the training batches present, in order", "[cifar]") {
  TempDir t;
  write_bytes(t.file("data_batch_1.bin"), records(3, 0, 0));
  write_bytes(t.file("data_batch_3.bin"), records(2, 5, 100));  // batch 2 absent: skipped
  write_bytes(t.file("test_batch.bin"), records(4, 9, 50));
  Dataset ds = load_cifar10(t.path().string(), true);
  REQUIRE(ds.n == 5);
  CHECK(ds.c == 3);
  CHECK(ds.h == 32);
  CHECK(ds.w == 32);
  CHECK(ds.labels == std::vector<int64_t>{0, 1, 2, 5, 6});
  // Record 3 is record 0 of batch 3: pixel p = (p + 100) % 256, R plane first.
  CHECK(ds.images[3 * 3072 + 0] == 100);
  CHECK(ds.images[3 * 3072 + 1024] == (1024 + 100) % 256);  // first G pixel
  CHECK(ds.images[4 * 3072 + 3071] == (13 + 3071 + 100) % 256);
  Dataset test = load_cifar10(t.path().string(), false);
  CHECK(test.n == 4);
  CHECK(test.labels == std::vector<int64_t>{9, 0, 1, 2});
}

TEST_CASE("load_cifar10 finds files in cifar-10-batches-bin", "[cifar]") {
  TempDir t;
  write_bytes(t.file("cifar-10-batches-bin/test_batch.bin"), records(2, 3, 0));
  Dataset ds = load_cifar10(t.path().string(), false);
  CHECK(ds.n == 2);
  CHECK(ds.labels == std::vector<int64_t>{3, 4});
}

TEST_CASE("load_cifar10 lists the places searched when no file is found", "[cifar]") {
  TempDir t;
  write_bytes(t.file("test_batch.bin"), records(1, 0, 0));
  const std::string dir = t.path().string();
  CHECK_THROWS_WITH(load_cifar10(dir, true), Contains("data_batch_1.bin") && Contains("data_batch_5.bin") &&
                                                 Contains(dir + "/cifar-10-batches-bin"));
  std::filesystem::remove(t.path() / "test_batch.bin");
  CHECK_THROWS_WITH(load_cifar10(dir, false), Contains("test_batch.bin") && Contains("not found"));
}

TEST_CASE("load_cifar10 rejects a file whose size is not a multiple of 3073", "[cifar]") {
  TempDir t;
  auto bytes = records(3, 0, 0);
  bytes.resize(bytes.size() - 1);
  write_bytes(t.file("data_batch_1.bin"), bytes);
  CHECK_THROWS_WITH(load_cifar10(t.path().string(), true),
                    Contains("data_batch_1.bin") && Contains("9218 bytes") && Contains("3073"));
}

TEST_CASE("load_cifar10 rejects an empty file", "[cifar]") {
  TempDir t;
  write_bytes(t.file("test_batch.bin"), {});
  CHECK_THROWS_WITH(load_cifar10(t.path().string(), false), Contains("test_batch.bin") && Contains("0 bytes"));
}

TEST_CASE("load_cifar10 rejects a label of 10 or more, naming file and record", "[cifar]") {
  TempDir t;
  write_bytes(t.file("data_batch_1.bin"), records(2, 0, 0));
  auto bytes = records(4, 0, 0);
  bytes[2 * 3073] = 200;
  write_bytes(t.file("data_batch_2.bin"), bytes);
  CHECK_THROWS_WITH(load_cifar10(t.path().string(), true),
                    Contains("data_batch_2.bin") && Contains("record 2") && Contains("label 200"));
}
