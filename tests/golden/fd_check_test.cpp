// Graph-level finite-difference check: the gradients that autodiff derives for two small inline
// models (an MLP and a CNN), run on the reference interpreter, against central differences of
// the forward loss on a few seeded random coordinates of every parameter.
//
// Tolerance (fp32 storage, fp64 accumulation): every value is still rounded to f32, so the
// loss carries a rounding noise of about 1e-7 that a difference quotient divides by the step.
// The estimate is Richardson's (4·D(h/2) − D(h))/3 of central differences D with h = 1e-2,
// which cancels the O(h²) truncation error (plain D(1e-2) was 3% off on a small conv weight
// ahead of batchnorm); what remains is the noise, about 1e-5 absolute (largest seen: 1.3e-5).
// A coordinate passes when |fd − ad| <= kAbsTol + kRelTol·|ad| with kAbsTol = 1e-4 and
// kRelTol = 1e-2 (the largest seen uses 10% of that), and the same samples with a gradient 5%
// off must fail somewhere, so the check does discriminate.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iterator>
#include <numeric>
#include <random>
#include <set>

#include "frontend/frontend.h"
#include "passes/compile.h"
#include "runtime/reference/interpreter.h"
#include "tests/support/inputs.h"

namespace dnnc::golden {
namespace {

namespace ref = runtime::reference;

constexpr double kStep = 1e-2;
constexpr double kAbsTol = 1e-4;
constexpr double kRelTol = 1e-2;
constexpr int kSamplesPerParam = 4;  // distinct coordinates (all of them for smaller params)

// An MLP with layernorm, gelu/tanh/sigmoid, a residual fan-out and a layer applied twice.
const char* kMlpSource = R"(model TinyMLP {
  input x: f32[N, 6]
  input label: i64[N]

  fc1 = linear(6, 8)
  ln  = layernorm(8)
  fc2 = linear(8, 8)
  fc3 = linear(8, 4)

  h1     = gelu(ln(fc1(x)))
  h2     = h1 + tanh(fc2(h1))
  h3     = fc2(sigmoid(h2))
  logits = fc3(h3 * 0.5)
  loss   = cross_entropy(logits, label)
}
)";

// A CNN with padding, a strided convolution, batchnorm and average pooling (conv2 has no bias:
// batchnorm right after it would make that gradient exactly zero). Max pooling and relu are
// piecewise linear: a step of 1e-2 on a conv weight moves window maxima across each other and
// the central difference then averages two slopes (3-4% off here), so they are held to PyTorch
// by the op and model goldens instead.
const char* kCnnSource = R"(model TinyCNN {
  input image: f32[N, 2, 10, 10]
  input label: i64[N]

  conv1 = conv2d(2, 3, kernel: 3, padding: 1)
  conv2 = conv2d(3, 4, kernel: 3, stride: 2, padding: 1, bias: false)
  bn    = batchnorm2d(4)
  fc    = linear(4 * 2 * 2, 5)

  h1     = avgpool2d(tanh(conv1(image)), 3, stride: 2, padding: 1)
  h2     = avgpool2d(gelu(bn(conv2(h1))), 2, stride: 1)
  logits = fc(flatten(h2))
  loss   = cross_entropy(logits, label)
}
)";

struct Sample {
  std::string param;
  int64_t index;
  double autodiff, numeric;
};

bool sample_ok(double autodiff, double numeric) {
  return std::abs(numeric - autodiff) <= kAbsTol + kRelTol * std::abs(autodiff);
}

// Compiles `source`, derives train_step, and samples autodiff vs central differences.
std::vector<Sample> gradient_samples(const std::string& source, const std::string& name, int64_t classes,
                                     uint64_t seed) {
  ir::Module m = frontend::compile_source(source, name + ".dnn");
  passes::compile(m, {.pipeline = {.passes = {"infer-shapes", "autodiff"}, .verify_each = true}});

  std::mt19937_64 rng(seed);
  const ir::Graph& fwd = *m.graph("forward");
  const ir::Graph& step = *m.graph("train_step");
  std::map<std::string, runtime::Tensor> inputs = test::random_inputs(fwd, 4, rng, test::Fill::normal, classes);
  const ref::ParamStore params = ref::init_params(m, seed);
  ref::RefOptions fp64;
  fp64.fp64_accumulate = true;

  ref::ParamStore scratch = params;  // runs may update buffers (batchnorm running stats)
  std::vector<runtime::Tensor> outs = ref::run_reference(m, step, inputs, scratch, fp64);
  auto loss_at = [&](const std::string& param, int64_t index, float value) {
    ref::ParamStore s = params;
    s.tensors.at(param).f32()[index] = value;
    return static_cast<double>(ref::run_reference(m, fwd, inputs, s, fp64).at(0).f32()[0]);
  };

  std::vector<Sample> samples;
  for (size_t o = 2; o < step.outputs.size(); ++o) {
    std::string gname = step.value(step.outputs[o]).name;
    REQUIRE(gname.ends_with(".grad"));
    std::string param = gname.substr(0, gname.size() - 5);
    const runtime::Tensor& grad = outs[o];
    std::vector<int64_t> all(static_cast<size_t>(grad.numel())), picked;
    std::iota(all.begin(), all.end(), 0);
    std::sample(all.begin(), all.end(), std::back_inserter(picked), kSamplesPerParam, rng);
    for (int64_t i : picked) {
      float w = params.find(param)->f32()[i];
      // Central difference with the step actually representable in f32 around w.
      auto central = [&](double h) {
        float wp = static_cast<float>(w + h), wm = static_cast<float>(w - h);
        return (loss_at(param, i, wp) - loss_at(param, i, wm)) / (static_cast<double>(wp) - wm);
      };
      double numeric = (4 * central(kStep / 2) - central(kStep)) / 3;  // Richardson: cancels the h² term
      samples.push_back({param, i, grad.f32()[i], numeric});
    }
  }
  return samples;
}

void check_samples(const std::string& model, const std::vector<Sample>& samples, size_t expected_params) {
  std::set<std::string> params;
  for (const Sample& s : samples) params.insert(s.param);
  REQUIRE(params.size() == expected_params);
  double worst = 0;
  for (const Sample& s : samples) {
    double err = std::abs(s.numeric - s.autodiff) / (kAbsTol + kRelTol * std::abs(s.autodiff));
    worst = std::max(worst, err);
    INFO(fmt::format("{} {}[{}]: autodiff {:.9g}, central difference {:.9g}", model, s.param, s.index, s.autodiff,
                     s.numeric));
    CHECK(sample_ok(s.autodiff, s.numeric));
  }
  INFO(fmt::format("{}: largest |fd - ad| / (abs_tol + rel_tol |ad|) = {:.3g}", model, worst));
  CHECK(worst <= 1.0);
  // The check is discriminating: the same samples with a gradient 5% off fail somewhere.
  int caught = 0;
  for (const Sample& s : samples) caught += !sample_ok(s.autodiff * 1.05, s.numeric);
  CHECK(caught > 0);
}

TEST_CASE("autodiff gradients of an MLP match central differences of its loss", "[golden][fd]") {
  check_samples("TinyMLP", gradient_samples(kMlpSource, "tiny_mlp", 4, 7), 8);
}

TEST_CASE("autodiff gradients of a CNN match central differences of its loss", "[golden][fd]") {
  check_samples("TinyCNN", gradient_samples(kCnnSource, "tiny_cnn", 5, 11), 7);
}

}  // namespace
}  // namespace dnnc::golden
