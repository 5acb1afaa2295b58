// The float optimizer kernels reproduce torch 1.13's SGD/Adam/AdamW bit for bit, on the steps
// recorded in optim_torch.json (written by make_optim_fixture.py).
#include <fstream>

#include <nlohmann/json.hpp>

#include "runtime/reference/kernels_optim.h"
#include "tests/reference/ref_test_util.h"

using namespace dnnc::runtime::reference;
using namespace dnnc::runtime::reference::testing;

namespace {

nlohmann::json load_fixture() {
  std::string path = std::string(DNNC_SOURCE_DIR) + "/tests/reference/optim_torch.json";
  std::ifstream in(path);
  INFO("fixture " << path << " (regenerate: /usr/bin/python3 tests/reference/make_optim_fixture.py)");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

BufF floats(const nlohmann::json& v) {
  std::vector<float> d;
  for (double x : v) d.push_back(static_cast<float>(x));
  return BufF({static_cast<int64_t>(d.size())}, d);
}

}  // namespace

TEST_CASE("optimizer kernels are bit-identical to torch.optim on recorded steps", "[reference][optim]") {
  nlohmann::json fx = load_fixture();
  const int steps = fx.at("steps");
  REQUIRE(fx.at("runs").size() == 5);
  for (const auto& run : fx.at("runs")) {
    const std::string kind = run.at("kind");
    const auto& o = run.at("options");
    INFO("run " << run.at("name").get<std::string>());
    BufF p = floats(fx.at("param")), a(p.shape), b(p.shape);
    for (int s = 0; s < steps; ++s) {
      BufF g = floats(fx.at("grads").at(static_cast<size_t>(s)));
      if (kind == "sgd") {
        SgdOptions so{o.at("lr"), o.at("momentum"), o.at("dampening"), o.at("weight_decay"), o.at("nesterov")};
        SgdOut<float> r = sgd_update(p, g, &a, s + 1, so);
        p = r.param;
        a = r.momentum_buf;
      } else {
        AdamOptions ao{o.at("lr"), o.at("beta1"), o.at("beta2"), o.at("eps"), o.at("weight_decay"), kind == "adamw"};
        AdamOut<float> r = adam_update(p, g, a, b, s + 1, ao);
        p = r.param, a = r.exp_avg, b = r.exp_avg_sq;
      }
      BufF want = floats(run.at("params").at(static_cast<size_t>(s)));
      INFO("step " << s + 1);
      REQUIRE(p.shape == want.shape);
      for (int64_t i = 0; i < p.numel(); ++i) {
        INFO("element " << i << ": " << p[i] << " vs torch " << want[i]);
        REQUIRE(p[i] == want[i]);
      }
    }
  }
}
