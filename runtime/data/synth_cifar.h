// Synthetic, learnable stand-in for CIFAR-10 in the real binary format, for tests and demos
// (same spirit as /work/shared/yardstick/make_cifar_synth.py): each class is an oriented
// sinusoidal grating with its own angle and frequency, a class colour tint and a class blob
// position; every image gets random phase, jitter, contrast, brightness, tint and noise.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/data/dataset.h"

namespace dnnc::runtime {

/// `n` synthetic 3x32x32 images; labels are balanced (counts differ by at most one) and
/// shuffled. The class patterns are fixed; `seed` picks the per-image randomness, so the same
/// (n, seed) always gives the same bytes. Throws std::invalid_argument if n < 0.
Dataset synthetic_cifar10(int64_t n, uint64_t seed);

/// Writes `ds` (3x32x32 images) as CIFAR-10 binary records to `path`.
/// Throws std::runtime_error naming the file if it cannot be written.
void write_cifar10_file(const std::string& path, const Dataset& ds);

/// Writes DIR/data_batch_1.bin .. data_batch_K.bin (K = n_train_batches, 1..5, each with
/// n_train_per_batch records), DIR/test_batch.bin (n_test records) and DIR/batches.meta.txt
/// (class names), creating DIR if needed. Deterministic for a seed; each file draws from its
/// own seed stream. Throws std::invalid_argument for counts below 1 or K outside 1..5, and
/// std::runtime_error naming the path if a file or directory cannot be written.
void write_synthetic_cifar10(const std::string& dir, int64_t n_train_per_batch, int64_t n_test, uint64_t seed,
                             int n_train_batches = 1);

}  // namespace dnnc::runtime
