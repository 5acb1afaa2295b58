// Tests of the training loop on synthetic CIFAR-10: learning, --steps, partial batches,
// deterministic shuffling, resume (epoch boundary and mid-epoch), NaN detection, evaluation.
#include "runtime/trainer/trainer.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>

#include "ir/lr_schedule.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/trainer/schedule.h"
#include "runtime/trainer/evaluate.h"
#include "trainer_test_util.h"

using namespace dnnc;
using namespace dnnc::runtime;

namespace {

TrainOptions options_of(const ir::Module& m) {
  TrainOptions o;
  o.epochs = m.train.epochs;
  o.batch = m.train.batch;
  o.seed = static_cast<uint64_t>(m.train.seed);
  o.mean = m.train.data.mean;
  o.std = m.train.data.std;
  o.eval_batch = 64;
  return o;
}

// Trains a fresh copy of `m` (params from its seed) from `start`, or from the params given.
TrainResult train_fresh(const ir::Module& m, const Dataset& train_set, const Dataset* test_set, const TrainOptions& o,
                        ParamStore* params_io = nullptr, TrainPosition start = {}) {
  ParamStore local = reference::init_params(m, o.seed);
  ParamStore& params = params_io ? *params_io : local;
  auto backend = make_reference_backend();
  ExecutableCache cache(*backend, m, params);
  return train(cache, train_set, test_set, o, start);
}

double mean_of(const std::vector<double>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end), 0.0) /
         static_cast<double>(end - begin);
}

}  // namespace

TEST_CASE("training on synthetic CIFAR-10 lowers the loss and beats chance", "[trainer]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  Dataset train_set = synthetic_cifar10(320, 11), test_set = synthetic_cifar10(200, 12);
  TrainOptions o = options_of(m);
  o.epochs = 3;
  TrainResult r = train_fresh(m, train_set, &test_set, o);
  REQUIRE(r.losses.size() == 60);
  INFO("first 10 steps " << mean_of(r.losses, 0, 10) << ", last 10 steps " << mean_of(r.losses, 50, 60));
  CHECK(mean_of(r.losses, 50, 60) < 0.8 * mean_of(r.losses, 0, 10));
  REQUIRE(r.epochs.size() == 3);
  REQUIRE(r.final_eval);
  CHECK(r.final_eval->total == 200);
  CHECK(r.final_eval->accuracy() > 0.3);  // chance is 0.1
  CHECK(r.end == TrainPosition{3, 0, 60});
}

TEST_CASE("max_steps stops after exactly that many steps and still evaluates", "[trainer]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  Dataset train_set = synthetic_cifar10(100, 1), test_set = synthetic_cifar10(30, 2);
  TrainOptions o = options_of(m);
  o.max_steps = 9;  // 7 batches per epoch: stops in the second epoch
  TrainResult r = train_fresh(m, train_set, &test_set, o);
  CHECK(r.losses.size() == 9);
  CHECK(r.stopped_by_max_steps);
  CHECK(r.end == TrainPosition{1, 2, 9});
  CHECK(r.epochs.size() == 1);
  REQUIRE(r.final_eval);
  CHECK(r.final_eval->total == 30);
}

TEST_CASE("each training step adds 1 to a batchnorm's num_batches_tracked; evaluation does not",
          "[trainer][batchnorm]") {
  ir::Module m = test::compile_for_training(test::kTinyBn);
  Dataset train_set = synthetic_cifar10(40, 1), test_set = synthetic_cifar10(16, 2);
  TrainOptions o = options_of(m);
  o.max_steps = 7;  // 5 batches per epoch, the last one partial: both executables count
  ParamStore params = reference::init_params(m, o.seed);
  TrainResult r = train_fresh(m, train_set, &test_set, o, &params);
  REQUIRE(r.losses.size() == 7);
  REQUIRE(r.final_eval);
  const Tensor& n = params.tensors.at("bn1.num_batches_tracked");
  CHECK(n.dtype() == ir::DType::i64);
  CHECK(n.i64()[0] == 7);
}

TEST_CASE("the last partial batch is trained with its own executable", "[trainer]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  Dataset train_set = synthetic_cifar10(100, 3), test_set = synthetic_cifar10(70, 4);
  TrainOptions o = options_of(m);
  o.batch = 32;
  o.eval_batch = 50;
  ParamStore params = reference::init_params(m, o.seed);
  test::CountingBackend backend;
  ExecutableCache cache(backend, m, params);
  TrainResult r = train(cache, train_set, &test_set, o);
  CHECK(r.losses.size() == 8);  // 2 epochs x (32 + 32 + 32 + 4)
  using Compiled = std::vector<std::pair<std::string, int64_t>>;
  CHECK(backend.compiled == Compiled{{"train_step", 32}, {"train_step", 4}, {"infer", 50}, {"infer", 20}});
}

TEST_CASE("the same seed gives the same losses; another seed or no shuffling differs", "[trainer]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  Dataset train_set = synthetic_cifar10(64, 5);
  TrainOptions o = options_of(m);
  o.epochs = 1;
  std::vector<double> a = train_fresh(m, train_set, nullptr, o).losses;
  CHECK(train_fresh(m, train_set, nullptr, o).losses == a);
  // The seed also initialises the params; keep them and change only the order.
  ParamStore params = reference::init_params(m, o.seed);
  TrainOptions other = o;
  other.seed = o.seed + 1;
  std::vector<double> b = train_fresh(m, train_set, nullptr, other, &params).losses;
  CHECK(b != a);
  CHECK(b.size() == a.size());
  TrainOptions unshuffled = o;
  unshuffled.shuffle = false;
  CHECK(train_fresh(m, train_set, nullptr, unshuffled).losses != a);
}

TEST_CASE("resuming at an epoch boundary reproduces the uninterrupted run exactly", "[trainer][resume]") {
  ir::Module m = test::compile_for_training(test::kTinyBn);
  Dataset train_set = synthetic_cifar10(40, 6), test_set = synthetic_cifar10(16, 7);
  TrainOptions o = options_of(m);
  o.epochs = 3;
  TrainResult full = train_fresh(m, train_set, &test_set, o);
  REQUIRE(full.losses.size() == 15);

  test::TempDir dir("resume_epoch");
  TrainOptions first = o;
  first.epochs = 1;
  first.save_path = dir.file("ck.safetensors");
  TrainResult a = train_fresh(m, train_set, &test_set, first);
  ParamStore params = reference::init_params(m, 999);  // other values: all must be replaced
  TrainPosition pos = load_checkpoint(first.save_path, m, {o.batch, o.seed, o.shuffle}, params);
  CHECK(pos == TrainPosition{1, 0, 5});
  TrainResult b = train_fresh(m, train_set, &test_set, o, &params, pos);
  std::vector<double> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  CHECK(joined == full.losses);
  REQUIRE(b.final_eval);
  CHECK(b.final_eval->correct == full.final_eval->correct);
}

TEST_CASE("resuming in the middle of an epoch skips the batches already done", "[trainer][resume]") {
  ir::Module m = test::compile_for_training(test::kTinyBn);
  Dataset train_set = synthetic_cifar10(44, 8);  // 6 batches of 8, the last of 4
  TrainOptions o = options_of(m);
  TrainResult full = train_fresh(m, train_set, nullptr, o);
  REQUIRE(full.losses.size() == 12);

  test::TempDir dir("resume_mid");
  TrainOptions first = o;
  first.max_steps = 8;  // stops after batch 2 of epoch 2
  first.save_path = dir.file("ck.safetensors");
  TrainResult a = train_fresh(m, train_set, nullptr, first);
  REQUIRE(a.end == TrainPosition{1, 2, 8});
  ParamStore params;
  TrainPosition pos = load_checkpoint(first.save_path, m, {o.batch, o.seed, o.shuffle}, params);
  CHECK(pos == a.end);
  TrainResult b = train_fresh(m, train_set, nullptr, o, &params, pos);
  std::vector<double> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  CHECK(joined == full.losses);
  CHECK(b.end == TrainPosition{2, 0, 12});
}

TEST_CASE("a non-finite loss stops training, naming the step, the epoch and the params", "[trainer][nan]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp, 1e12);
  Dataset train_set = synthetic_cifar10(64, 9);
  TrainOptions o = options_of(m);
  std::vector<double> seen;
  try {
    train_fresh(m, train_set, nullptr, o);
    FAIL("training with lr 1e12 did not stop");
  } catch (const NonFiniteLossError& e) {
    std::string what = e.what();
    INFO(what);
    CHECK(e.step() >= 2);  // the first loss comes from the initial, finite params
    CHECK(e.epoch() == 1 + (e.step() - 1) / 4);
    CHECK(
        what.starts_with("step " + std::to_string(e.step()) + " (epoch " + std::to_string(e.epoch()) + "): loss is "));
    CHECK(!e.bad_params().empty());
    CHECK(what.find(e.bad_params().front()) != std::string::npos);
  }
}

TEST_CASE("evaluation counts argmax hits and does not depend on the eval batch size", "[trainer][eval]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  Dataset test_set = synthetic_cifar10(45, 10);
  ParamStore params = reference::init_params(m, 1);
  auto backend = make_reference_backend();
  ExecutableCache cache(*backend, m, params);
  BatchFeed feed = make_batch_feed(m, kInferGraph, test_set, m.train.data.mean, m.train.data.std);
  // The expected count, image by image, straight from the interpreter.
  int64_t expected = 0;
  for (int64_t i = 0; i < test_set.n; ++i) {
    std::vector<int64_t> one{i};
    auto out = reference::run_reference(m, *m.graph("infer"), feed.make(test_set, one), params);
    if (argmax(out[0].f32(), out[0].dim(1)) == test_set.labels[static_cast<size_t>(i)]) ++expected;
  }
  EvalResult a = evaluate(cache, test_set, feed, 500);
  EvalResult b = evaluate(cache, test_set, feed, 7);
  CHECK(a.total == 45);
  CHECK(a.correct == expected);
  CHECK(b.correct == expected);
}

TEST_CASE("a data set of the wrong image size is refused, naming the input", "[trainer]") {
  ir::Module m = test::compile_for_training(test::kTinyMlp);
  Dataset wrong;
  wrong.n = 2, wrong.c = 1, wrong.h = 28, wrong.w = 28;
  wrong.images.assign(2 * 28 * 28, 0);
  wrong.labels = {0, 1};
  CHECK_THROWS_WITH(make_batch_feed(m, kTrainGraph, wrong, {}, {}),
                    Catch::Contains("input 'image' is f32[N,3,32,32], but the data set's images are 1x28x28 (784 "
                                    "values each): expected f32[N,1,28,28] or another shape with 784 values"));
}

TEST_CASE("a flat image input, f32[N, C*H*W], is fed the images flattened in C, H, W order", "[trainer]") {
  ir::Module flat = test::compile_for_training("tests/trainer/flat_mlp.dnn");
  ir::Module nchw = test::compile_for_training(test::kTinyMlp);
  Dataset ds = synthetic_cifar10(20, 3);
  BatchFeed a = make_batch_feed(flat, kTrainGraph, ds, flat.train.data.mean, flat.train.data.std);
  BatchFeed b = make_batch_feed(nchw, kTrainGraph, ds, nchw.train.data.mean, nchw.train.data.std);
  CHECK(a.image_dims == std::vector<int64_t>{3072});
  std::vector<int64_t> idx{4, 0, 19};
  Tensor x = a.make(ds, idx).at("image"), y = b.make(ds, idx).at("image");
  CHECK(x.shape() == std::vector<int64_t>{3, 3072});
  CHECK(y.shape() == std::vector<int64_t>{3, 3, 32, 32});
  CHECK(std::memcmp(x.data(), y.data(), y.nbytes()) == 0);

  // And it trains: the loss falls on data it can learn.
  Dataset train_set = synthetic_cifar10(160, 11);
  ParamStore params = reference::init_params(flat, 7);
  auto backend = make_reference_backend();
  ExecutableCache cache(*backend, flat, params);
  TrainOptions o;
  o.epochs = 3, o.batch = 16, o.seed = 7, o.mean = flat.train.data.mean, o.std = flat.train.data.std;
  TrainResult r = train(cache, train_set, nullptr, o);
  REQUIRE(r.epochs.size() == 3);
  CHECK(r.epochs.back().mean_loss < r.epochs.front().mean_loss);
}

TEST_CASE("augmented training still learns, changes the batches, and resumes mid-epoch exactly",
          "[trainer][augment]") {
  ir::Module m = test::compile_for_training(test::kTinyBn);
  Dataset train_set = synthetic_cifar10(320, 21), test_set = synthetic_cifar10(200, 22);
  TrainOptions o = options_of(m);
  o.epochs = 3;
  // Synthetic classes are gratings of their own angle with a blob at their own place: a flip
  // turns the angle, a crop moves the blob, so augmentation costs accuracy here (real images
  // keep their class; tests/trainer/e2e_augment.sh checks the band on real MNIST). It must
  // still learn.
  TrainOptions crop = o;
  crop.augment = {3, 0};
  TrainResult plain = train_fresh(m, train_set, &test_set, o);
  TrainResult cropped = train_fresh(m, train_set, &test_set, crop);
  REQUIRE(cropped.losses.size() == plain.losses.size());
  CHECK(cropped.losses != plain.losses);  // other pixels, other losses
  REQUIRE(cropped.final_eval);
  INFO("accuracy plain " << plain.final_eval->accuracy() << ", cropped " << cropped.final_eval->accuracy());
  CHECK(cropped.final_eval->accuracy() > 0.15);  // chance 0.1
  CHECK(cropped.losses.back() < cropped.losses.front());

  TrainOptions aug = o;
  aug.augment = {4, 0.5};
  TrainResult full = train_fresh(m, train_set, &test_set, aug);

  test::TempDir dir("resume_augment");
  TrainOptions first = aug;
  first.max_steps = 50;  // 40 batches per epoch: stops in epoch 2
  first.save_path = dir.file("ck.safetensors");
  TrainResult a = train_fresh(m, train_set, nullptr, first);
  ParamStore params;
  TrainPosition pos = load_checkpoint(first.save_path, m, {o.batch, o.seed, o.shuffle}, params);
  TrainResult b = train_fresh(m, train_set, &test_set, aug, &params, pos);
  std::vector<double> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  CHECK(joined == full.losses);
}

namespace {

// `path` compiled with schedule `kind`(`attrs`) added to its train block (and `optimizer`, if
// given, in place of its own).
ir::Module with_schedule(const std::string& path, const std::string& kind, ir::Attrs attrs,
                         std::optional<ir::OptimizerConfig> optimizer = std::nullopt) {
  ir::Module m = frontend::compile_file(path);
  m.train.schedule = {kind, std::move(attrs)};
  if (optimizer) m.train.optimizer = *optimizer;
  passes::compile(m);
  return m;
}

struct LrLog final : TrainObserver {
  std::vector<double> lrs;
  void on_step(const StepEvent& e) override { lrs.push_back(e.lr); }
};

}  // namespace

TEST_CASE("a scheduled lr is what the update uses: lr 0 from epoch 2 on leaves the params alone",
          "[trainer][schedule]") {
  // Plain SGD: a zero lr changes nothing (momentum would keep moving the params).
  ir::Module m = with_schedule(test::kTinyMlp, "step", {{"step_size", int64_t{1}}, {"gamma", 0.0}},
                               ir::OptimizerConfig{"sgd", {{"lr", 0.05}}});
  Dataset train_set = synthetic_cifar10(40, 9);
  TrainOptions o = options_of(m);
  o.epochs = 1;
  ParamStore one = reference::init_params(m, o.seed);
  ParamStore init = one;
  train_fresh(m, train_set, nullptr, o, &one);
  ParamStore two = init;
  o.epochs = 3;
  LrLog log;
  {
    auto backend = cpu::make_cpu_backend();
    ExecutableCache cache(*backend, m, two);
    train(cache, train_set, nullptr, o, {}, &log);
  }
  const int64_t nb = batches_per_epoch(train_set.n, o.batch);
  REQUIRE(log.lrs.size() == static_cast<size_t>(3 * nb));
  for (size_t i = 0; i < log.lrs.size(); ++i) CHECK(log.lrs[i] == (static_cast<int64_t>(i) < nb ? 0.05 : 0.0));
  bool moved = false;
  for (const auto& [name, t] : one.tensors) {
    if (m.param(name)->role != ir::ParamRole::weight) continue;
    INFO(name);
    const Tensor& after3 = *two.find(name);
    CHECK(rel_error(after3, t) < 1e-6);  // cpu backend's 3 epochs = reference's first epoch
    moved |= rel_error(t, *init.find(name)) > 1e-3;
  }
  CHECK(moved);
}

TEST_CASE("a scheduled run resumed in the middle of an epoch continues the schedule exactly",
          "[trainer][schedule][resume]") {
  ir::Module m = with_schedule(test::kTinyBn, "one_cycle", {{"max_lr", 0.02}});
  Dataset train_set = synthetic_cifar10(44, 8);  // 6 batches per epoch
  TrainOptions o = options_of(m);
  LrLog full_log;
  ParamStore fp = reference::init_params(m, o.seed);
  TrainResult full;
  {
    auto backend = make_reference_backend();
    ExecutableCache cache(*backend, m, fp);
    full = train(cache, train_set, nullptr, o, {}, &full_log);
  }
  REQUIRE(full_log.lrs.size() == 12);
  ir::LrSchedule sched(m.train.schedule, 0.01, 2, 6);
  for (size_t i = 0; i < 12; ++i) CHECK(full_log.lrs[i] == sched.lr(static_cast<int64_t>(i) / 6, static_cast<int64_t>(i)));

  test::TempDir dir("resume_schedule");
  TrainOptions first = o;
  first.max_steps = 8;
  first.save_path = dir.file("ck.safetensors");
  TrainResult a = train_fresh(m, train_set, nullptr, first);
  ParamStore params;
  TrainPosition pos = load_checkpoint(first.save_path, m, {o.batch, o.seed, o.shuffle}, params);
  LrLog rest;
  TrainResult b;
  {
    auto backend = make_reference_backend();
    ExecutableCache cache(*backend, m, params);
    b = train(cache, train_set, nullptr, o, pos, &rest);
  }
  std::vector<double> joined = a.losses;
  joined.insert(joined.end(), b.losses.begin(), b.losses.end());
  CHECK(joined == full.losses);
  CHECK(rest.lrs == std::vector<double>(full_log.lrs.begin() + 8, full_log.lrs.end()));
  for (const auto& [name, t] : fp.tensors)
    if (t.dtype() == ir::DType::f32) CHECK(rel_error(*params.find(name), t) == 0.0);
}
