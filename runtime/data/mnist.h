// MNIST from IDX files (plain or .gz), in a flat directory or torchvision's MNIST/raw layout.
#pragma once
#include <string>
#include <vector>

#include "runtime/data/dataset.h"

namespace dnnc::runtime {

/// The candidate paths for the MNIST file `name` (e.g. "train-images-idx3-ubyte") under `dir`, in
/// search order: DIR/NAME, DIR/NAME.gz, DIR/raw/NAME, DIR/raw/NAME.gz, DIR/MNIST/raw/NAME, ...gz.
std::vector<std::string> mnist_candidate_paths(const std::string& dir, const std::string& name);

/// Loads the MNIST training split (train-images-idx3-ubyte + train-labels-idx1-ubyte) or test
/// split (t10k-*) from `dir` as a Dataset of n x 1 x 28 x 28 images with labels in 0..9.
/// Throws std::runtime_error naming the file at fault if a file is missing (listing the places
/// searched), unreadable, has the wrong magic (0x00000803 images, 0x00000801 labels), rank or
/// image size (28x28), is truncated or too long, if image and label counts differ, or if a
/// label is 10 or more.
Dataset load_mnist(const std::string& dir, bool train);

}  // namespace dnnc::runtime
