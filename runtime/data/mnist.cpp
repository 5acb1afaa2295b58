// MNIST loader: locate the IDX files, validate magic, dims, counts and labels.
#include "runtime/data/mnist.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <stdexcept>

#include "runtime/data/idx.h"

namespace dnnc::runtime {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;
constexpr int64_t kSide = 28;

std::string find_mnist_file(const std::string& dir, const std::string& name) {
  std::vector<std::string> candidates = mnist_candidate_paths(dir, name);
  for (const std::string& p : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) return p;
  }
  throw std::runtime_error(fmt::format("MNIST file {} (or {}.gz) not found; searched: {}", name, name,
                                       fmt::join(candidates, ", ")));
}

void check_magic(const std::string& path, const IdxArray& a, uint32_t want, const char* what) {
  if (a.magic != want)
    throw std::runtime_error(fmt::format("{}: expected magic 0x{:08x} ({}), found 0x{:08x}", path, want, what, a.magic));
}

}  // namespace

std::vector<std::string> mnist_candidate_paths(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const fs::path& sub : {fs::path(dir), fs::path(dir) / "raw", fs::path(dir) / "MNIST" / "raw"}) {
    out.push_back((sub / name).string());
    out.push_back((sub / (name + ".gz")).string());
  }
  return out;
}

Dataset load_mnist(const std::string& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_mnist_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_mnist_file(dir, prefix + "-labels-idx1-ubyte");

  IdxArray images = read_idx(images_path);
  check_magic(images_path, images, kImagesMagic, "unsigned-byte images, rank 3");
  if (images.dims[1] != kSide || images.dims[2] != kSide)
    throw std::runtime_error(fmt::format("{}: expected {}x{} images, found {}x{}", images_path, kSide, kSide,
                                         images.dims[1], images.dims[2]));
  IdxArray labels = read_idx(labels_path);
  check_magic(labels_path, labels, kLabelsMagic, "unsigned-byte labels, rank 1");
  if (images.dims[0] != labels.dims[0])
    throw std::runtime_error(fmt::format("MNIST count mismatch: {} holds {} images but {} holds {} labels",
                                         images_path, images.dims[0], labels_path, labels.dims[0]));

  Dataset ds;
  ds.n = images.dims[0];
  ds.c = 1;
  ds.h = kSide;
  ds.w = kSide;
  ds.images = std::move(images.data);
  ds.labels.resize(static_cast<size_t>(ds.n));
  for (int64_t i = 0; i < ds.n; ++i) {
    if (labels.data[i] >= ds.num_classes)
      throw std::runtime_error(fmt::format("{}: label {} of sample {} is not a class in 0..{}", labels_path,
                                           labels.data[i], i, ds.num_classes - 1));
    ds.labels[i] = labels.data[i];
  }
  return ds;
}

}  // namespace dnnc::runtime
