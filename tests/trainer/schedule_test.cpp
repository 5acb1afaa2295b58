// Tests of the per-epoch sample order and batching (runtime/trainer/schedule.h).
#include "runtime/trainer/schedule.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

using namespace dnnc::runtime;

TEST_CASE("epoch_order is a permutation, the same for the same seed and epoch", "[trainer][schedule]") {
  std::vector<int64_t> a = epoch_order(1000, 42, 3);
  std::vector<int64_t> b = epoch_order(1000, 42, 3);
  CHECK(a == b);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  CHECK(sorted == iota);
  CHECK(a != iota);
}

TEST_CASE("epoch_order differs between seeds and between epochs", "[trainer][schedule]") {
  std::vector<int64_t> base = epoch_order(500, 1, 0);
  CHECK(epoch_order(500, 2, 0) != base);
  CHECK(epoch_order(500, 1, 1) != base);
}

TEST_CASE("epoch_order without shuffling is the data set order", "[trainer][schedule]") {
  std::vector<int64_t> order = epoch_order(7, 9, 2, false);
  CHECK(order == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
}

TEST_CASE("the last partial batch is a batch of its own", "[trainer][schedule]") {
  CHECK(batches_per_epoch(100, 32) == 4);
  CHECK(batches_per_epoch(96, 32) == 3);
  CHECK(batches_per_epoch(8000, 128) == 63);
  std::vector<int64_t> order = epoch_order(100, 5, 0);
  CHECK(batch_indices(order, 32, 0).size() == 32);
  auto last = batch_indices(order, 32, 3);
  REQUIRE(last.size() == 4);
  CHECK(std::vector<int64_t>(last.begin(), last.end()) == std::vector<int64_t>(order.begin() + 96, order.end()));
}

TEST_CASE("splitmix64 matches the reference sequence", "[trainer][schedule]") {
  // splitmix64 with state 0: the first output of Vigna's reference generator.
  CHECK(splitmix64(0) == 0xe220a8397b1dcdafull);
}
