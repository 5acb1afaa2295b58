// CIFAR-10 in its binary format (cifar-10-batches-bin): records of 1 label byte + 3072 pixel
// bytes (1024 R, 1024 G, 1024 B, each 32x32 row-major).
#pragma once
#include <cstdint>
#include <string>

#include "runtime/data/dataset.h"

namespace dnnc::runtime {

inline constexpr int64_t kCifarRecordBytes = 3073;

/// Loads the CIFAR-10 training split (data_batch_1.bin .. data_batch_5.bin, those present, in
/// order; at least one required) or the test split (test_batch.bin) from `dir` or
/// `dir/cifar-10-batches-bin`, as n x 3 x 32 x 32 images. Throws std::runtime_error naming the
/// file if none is found (listing the places searched), a file cannot be read, its size is not
/// a non-zero multiple of 3073 bytes, or a record's label is 10 or more (naming the record).
Dataset load_cifar10(const std::string& dir, bool train);

/// Appends the records of one CIFAR-10 binary file to `ds` (which must be empty or 3x32x32).
/// Throws like load_cifar10.
void append_cifar10_file(Dataset& ds, const std::string& path);

}  // namespace dnnc::runtime
