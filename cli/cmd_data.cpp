// `dnnc data`: data set utilities; `dnnc data synth-cifar DIR` writes synthetic, learnable
// images in the real CIFAR-10 binary format (runtime/data/synth_cifar.h).
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <stdexcept>

#include "cli/commands.h"
#include "runtime/data/synth_cifar.h"

namespace dnnc::cli {
namespace {

struct SynthOptions {
  std::string dir;
  int64_t train = 10000, test = 2000;
  uint64_t seed = 0;
};

constexpr int64_t kCifarBatchRecords = 10000;  // records per data_batch_K.bin in the real data set

int run_synth(const SynthOptions& o) {
  // As the real data set: files of 10,000 records, at most 5; a smaller set is one file.
  int64_t files = (o.train + kCifarBatchRecords - 1) / kCifarBatchRecords;
  if (files > 5 || o.train % files != 0)
    throw std::invalid_argument(fmt::format(
        "--train {}: the training split is written as 1 to 5 equal files of at most {} records, so it must be at "
        "most 50000 and divisible by {}",
        o.train, kCifarBatchRecords, files));
  runtime::write_synthetic_cifar10(o.dir, o.train / files, o.test, o.seed, static_cast<int>(files));
  std::cout << fmt::format(
      "wrote {}: {} training images in {} file{} (data_batch_*.bin), {} test images "
      "(test_batch.bin), seed {}\n",
      o.dir, o.train, files, files == 1 ? "" : "s", o.test, o.seed);
  return 0;
}

}  // namespace

void add_data_command(CLI::App& app, Runner& run) {
  CLI::App* cmd = app.add_subcommand("data", "Data set utilities");
  cmd->require_subcommand(1);
  auto o = std::make_shared<SynthOptions>();
  CLI::App* synth = cmd->add_subcommand("synth-cifar", "Write synthetic, learnable data in the CIFAR-10 binary format");
  synth->add_option("dir", o->dir, "output directory (created if needed)")->required();
  synth->add_option("--train", o->train, "training images (default 10000)")->check(CLI::PositiveNumber);
  synth->add_option("--test", o->test, "test images (default 2000)")->check(CLI::PositiveNumber);
  synth->add_option("--seed", o->seed, "seed of the per-image randomness (default 0)");
  synth->callback([&run, o] { run = [o] { return guarded([&] { return run_synth(*o); }); }; });
}

}  // namespace dnnc::cli
