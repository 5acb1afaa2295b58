// Train block lowering: defaults, per-channel normalisation, optimizer attributes.
#include <catch2/catch.hpp>

#include "test_util.h"

using namespace dnnc;

namespace {
const char* kModel =
    "model M {\n"
    "  input image: f32[N, 3, 32, 32]\n"
    "  input label: i64[N]\n"
    "  fc = linear(3072, 10)\n"
    "  loss = cross_entropy(fc(flatten(image)), label)\n"
    "}\n";

ir::TrainConfig train(const std::string& body) {
  return frontend::compile_source(std::string(kModel) + "train M {\n" + body + "\n}\n", "t.dnn").train;
}
}  // namespace

TEST_CASE("train: seed defaults to 0 and data is optional", "[frontend][train]") {
  ir::TrainConfig t = train("  batch = 8\n  epochs = 1\n  optimizer = sgd(lr: 0.1)");
  CHECK(t.present);
  CHECK(t.seed == 0);
  CHECK(t.data.dataset.empty());
  CHECK(t.loc == ir::SourceLoc{7, 7});
}

TEST_CASE("train: sgd fills every PyTorch default", "[frontend][train]") {
  ir::TrainConfig t = train("  batch = 8\n  epochs = 1\n  optimizer = sgd()");
  CHECK(t.optimizer.attrs ==
        ir::Attrs{{"lr", 0.001}, {"momentum", 0.0}, {"dampening", 0.0}, {"weight_decay", 0.0}, {"nesterov", false}});
}

TEST_CASE("train: sgd arguments may be positional in PyTorch's order", "[frontend][train]") {
  ir::TrainConfig t = train("  batch = 8\n  epochs = 1\n  optimizer = sgd(0.05, 0.9, 0, 1e-4, true)");
  CHECK(t.optimizer.attrs ==
        ir::Attrs{{"lr", 0.05}, {"momentum", 0.9}, {"dampening", 0.0}, {"weight_decay", 1e-4}, {"nesterov", true}});
}

TEST_CASE("train: adamw defaults weight_decay to 0.01, adam to 0; betas split into beta1/beta2", "[frontend][train]") {
  ir::TrainConfig w = train("  batch = 8\n  epochs = 1\n  optimizer = adamw(betas: (0.8, 0.99))");
  CHECK(w.optimizer.kind == "adamw");
  CHECK(w.optimizer.attrs ==
        ir::Attrs{{"lr", 0.001}, {"beta1", 0.8}, {"beta2", 0.99}, {"eps", 1e-8}, {"weight_decay", 0.01}});
  ir::TrainConfig a = train("  batch = 8\n  epochs = 1\n  optimizer = adam(lr: 3e-4, eps: 1e-6)");
  CHECK(a.optimizer.attrs ==
        ir::Attrs{{"lr", 3e-4}, {"beta1", 0.9}, {"beta2", 0.999}, {"eps", 1e-6}, {"weight_decay", 0.0}});
}

TEST_CASE("train: a single normalize value applies to every channel", "[frontend][train]") {
  ir::TrainConfig t = train(
      "  data = cifar10(normalize: mean (0.5), std (0.25, 0.5, 0.75))\n"
      "  batch = 8\n  epochs = 1\n  optimizer = sgd()");
  CHECK(t.data.dataset == "cifar10");
  CHECK(t.data.mean == std::vector<double>{0.5, 0.5, 0.5});
  CHECK(t.data.std == std::vector<double>{0.25, 0.5, 0.75});
}

TEST_CASE("train: without normalize, mean is 0 and std is 1 per channel", "[frontend][train]") {
  ir::TrainConfig t = train("  data = cifar10()\n  batch = 8\n  epochs = 1\n  optimizer = sgd()");
  CHECK(t.data.mean == std::vector<double>{0, 0, 0});
  CHECK(t.data.std == std::vector<double>{1, 1, 1});
}

TEST_CASE("train: the image input may have any shape with the data set's values per sample", "[frontend][train]") {
  ir::Module m = frontend::compile_source(
      "model M {\n  input image: f32[N, 784]\n  input label: i64[N]\n  fc = linear(784, 10)\n"
      "  loss = cross_entropy(fc(image), label)\n}\n"
      "train M {\n  data = mnist()\n  batch = 1\n  epochs = 1\n  optimizer = sgd()\n}\n",
      "t.dnn");
  CHECK(m.train.data.dataset == "mnist");
}

TEST_CASE("train: fashion_mnist is a data set of 1x28x28 images", "[frontend][train]") {
  ir::Module m = frontend::compile_source(
      "model M {\n  input image: f32[N, 1, 28, 28]\n  input label: i64[N]\n  fc = linear(784, 10)\n"
      "  loss = cross_entropy(fc(flatten(image)), label)\n}\n"
      "train M {\n  data = fashion_mnist(normalize: mean (0.286), std (0.353))\n  batch = 1\n  epochs = 1\n"
      "  optimizer = sgd()\n}\n",
      "t.dnn");
  CHECK(m.train.data.dataset == "fashion_mnist");
  CHECK(m.train.data.mean == std::vector<double>{0.286});
  CHECK_THROWS_WITH(frontend::compile_source(std::string(kModel) + "train M {\n  data = fashion_mnist()\n  batch = 8\n"
                                                                    "  epochs = 1\n  optimizer = sgd()\n}\n",
                                             "t.dnn"),
                    Catch::Contains("but fashion_mnist images are f32[N,1,28,28]"));
}

TEST_CASE("train: augment takes random_crop and random_horizontal_flip, alone or as a tuple", "[frontend][train]") {
  ir::TrainConfig both = train(
      "  data = cifar10()\n  augment = (random_crop(padding: 4), random_horizontal_flip())\n"
      "  batch = 8\n  epochs = 1\n  optimizer = sgd()");
  CHECK(both.data.crop_padding == 4);
  CHECK(both.data.flip_p == 0.5);
  ir::TrainConfig flip = train("  augment = random_horizontal_flip(p: 0.25)\n  batch = 8\n  optimizer = sgd()");
  CHECK(flip.data.crop_padding == 0);
  CHECK(flip.data.flip_p == 0.25);
  auto error = [](const std::string& body) {
    try {
      train(body + "\n  batch = 8\n  optimizer = sgd()");
    } catch (const ir::CompileError& e) {
      return e.message();
    }
    return std::string("no error");
  };
  CHECK(error("  augment = random_flip()") ==
        "unknown augmentation 'random_flip'; known: random_crop, random_horizontal_flip");
  CHECK(error("  augment = random_crop(padding: 0)") == "padding of random_crop must be at least 1, found 0");
  CHECK(error("  augment = random_crop()") == "random_crop is missing argument 'padding'; it takes (padding)");
  CHECK(error("  augment = (random_crop(padding: 2), random_crop(padding: 4))") ==
        "augmentation random_crop is given twice (first at 8:14)");
  CHECK(error("  augment = random_horizontal_flip(p: 1.5)") ==
        "p of random_horizontal_flip must be in (0, 1], found 1.5");
}

TEST_CASE("train: schedule takes PyTorch's schedulers with their arguments", "[frontend][train][schedule]") {
  auto schedule = [](const std::string& s) {
    return train("  batch = 8\n  epochs = 6\n  optimizer = sgd(lr: 0.1)\n  schedule = " + s).schedule;
  };
  CHECK(train("  batch = 8\n  optimizer = sgd()").schedule.kind.empty());
  ir::ScheduleConfig step = schedule("step(step_size: 2, gamma: 0.5)");
  CHECK(step.kind == "step");
  CHECK(step.attrs == ir::Attrs{{"step_size", int64_t{2}}, {"gamma", 0.5}});
  CHECK(schedule("step(3)").attrs == ir::Attrs{{"step_size", int64_t{3}}});
  CHECK(schedule("multistep(milestones: (2, 4))").attrs ==
        ir::Attrs{{"milestones", std::vector<int64_t>{2, 4}}});
  CHECK(schedule("cosine()").attrs.empty());
  CHECK(schedule("cosine(t_max: 10, eta_min: 1e-4)").attrs == ir::Attrs{{"t_max", 10.0}, {"eta_min", 1e-4}});
  CHECK(schedule("linear(start_factor: 0.1, total_iters: 3)").attrs ==
        ir::Attrs{{"start_factor", 0.1}, {"total_iters", int64_t{3}}});
  ir::ScheduleConfig oc = schedule("one_cycle(max_lr: 0.1, pct_start: 0.25, anneal_strategy: linear, three_phase: true)");
  CHECK(oc.kind == "one_cycle");
  CHECK(oc.attrs == ir::Attrs{{"max_lr", 0.1},
                              {"pct_start", 0.25},
                              {"anneal_strategy", std::string("linear")},
                              {"three_phase", true}});
}

TEST_CASE("train: clip_grad_norm is a positive max norm", "[frontend][train]") {
  CHECK(train("  batch = 8\n  optimizer = sgd()").clip_grad_norm == 0);
  CHECK(train("  batch = 8\n  optimizer = sgd()\n  clip_grad_norm = 1.5").clip_grad_norm == 1.5);
  CHECK(train("  batch = 8\n  optimizer = sgd()\n  clip_grad_norm = 2").clip_grad_norm == 2.0);
  CHECK(test::error_of(std::string(kModel) + "train M {\n  batch = 8\n  optimizer = sgd()\n  clip_grad_norm = 0\n}\n") ==
        "10:20 clip_grad_norm must be positive, found 0");
}

TEST_CASE("train: a bad schedule is reported at the argument at fault", "[frontend][train][schedule]") {
  auto error = [](const std::string& s) {
    return test::error_of(std::string(kModel) + "train M {\n  batch = 8\n  optimizer = sgd()\n  schedule = " + s + "\n}\n");
  };
  CHECK(error("exponential(gamma: 0.9)") ==
        "10:14 unknown schedule 'exponential'; known: step, multistep, cosine, linear, one_cycle");
  CHECK(error("cosin()") == "10:14 unknown schedule 'cosin'; did you mean 'cosine'?");
  CHECK(error("step(step_size: 0)") == "10:30 schedule step: step_size must be at least 1, found 0");
  CHECK(error("step()") == "10:14 schedule step is missing argument 'step_size'; it takes (step_size, gamma)");
  CHECK(error("cosine(T_max: 5)") ==
        "10:21 schedule cosine has no argument 'T_max'; did you mean 't_max'?");
  CHECK(error("linear(start_factor: 0)") == "10:35 schedule linear: start_factor must be in (0, 1], found 0");
  CHECK(error("one_cycle(max_lr: 0.1, anneal_strategy: exp)") ==
        "10:54 argument 'anneal_strategy' of schedule one_cycle expects cos or linear; found exp");
  CHECK(error("one_cycle(max_lr: 0.1, pct_start: 2.0)") ==
        "10:48 schedule one_cycle: pct_start must be in [0, 1], found 2");
  CHECK(error("multistep(milestones: (3, -1))") ==
        "10:36 schedule multistep: milestones must be epochs >= 0, found -1");
  CHECK(error("step(2, gamma: lr)") == "10:29 unknown identifier 'lr'; train settings take constants");
}
