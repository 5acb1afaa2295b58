// Shape rules of the elementwise, shape, backward and optimizer ops.
#include <catch2/catch.hpp>

#include "registry_helpers.h"

using namespace dnnc::ir;
using namespace dnnc::ir::test;
using S = std::vector<std::string>;
using I = std::vector<int64_t>;

TEST_CASE("unary maps keep the type (layout included) and need f32", "[ir][rules]") {
  for (const char* op : {"relu", "tanh", "sigmoid", "gelu", "leaky_relu", "neg"}) {
    INFO(op);
    CHECK(infer_str(op, {"f32[N,16,4,4]{nhwc}"}) == S{"f32[N,16,4,4]{nhwc}"});
    REQUIRE_SHAPE_ERROR(op, (S{"i64[N]"}), {}, "expected f32, found i64", 0);
  }
}

TEST_CASE("scalar ops need their value attribute", "[ir][rules]") {
  for (const char* op : {"add_scalar", "mul_scalar", "div_scalar"}) {
    INFO(op);
    CHECK(infer_str(op, {"f32[N,3]"}, {{"value", 2.0}}) == S{"f32[N,3]"});
    REQUIRE_SHAPE_ERROR(op, (S{"f32[N,3]"}), {}, "missing required attribute 'value'", -1);
  }
}

TEST_CASE("softmax and log_softmax: axis must name a dim", "[ir][rules]") {
  for (const char* op : {"softmax", "log_softmax"}) {
    INFO(op);
    CHECK(infer_str(op, {"f32[N,10]"}) == S{"f32[N,10]"});
    REQUIRE_SHAPE_ERROR(op, (S{"f32[N,10]"}), (Attrs{{"axis", int64_t{2}}}), "expected a value in [-2, 1], found 2",
                        -1);
  }
}

TEST_CASE("binary ops broadcast like numpy; the batch dim only with itself or 1", "[ir][rules]") {
  for (const char* op : {"add", "sub", "mul", "div"}) {
    INFO(op);
    CHECK(infer_str(op, {"f32[N,16,8,8]", "f32[16,1,1]"}) == S{"f32[N,16,8,8]"});
    CHECK(infer_str(op, {"f32[1,3]", "f32[N,1]"}) == S{"f32[N,3]"});
    CHECK(infer_str(op, {"f32[]", "f32[N,2]"}) == S{"f32[N,2]"});
    REQUIRE_SHAPE_ERROR(op, (S{"f32[N,3]", "f32[4,3]"}), {}, "expected N or 1, found 4", 1);
    REQUIRE_SHAPE_ERROR(op, (S{"f32[2,3]", "f32[2,4]"}), {}, "expected 3 or 1, found 4", 1);
  }
}

TEST_CASE("reduce_sum: drops or keeps the listed axes", "[ir][rules]") {
  CHECK(infer_str("reduce_sum", {"f32[N,16,8,8]"}, {{"axes", I{0, 2, 3}}}) == S{"f32[16]"});
  CHECK(infer_str("reduce_sum", {"f32[N,16,8,8]"}, {{"axes", I{-1}}, {"keepdim", true}}) == S{"f32[N,16,8,1]"});
  REQUIRE_SHAPE_ERROR("reduce_sum", (S{"f32[N,3]"}), (Attrs{{"axes", I{1, -1}}}), "axis 1 is listed twice", -1);
  REQUIRE_SHAPE_ERROR("reduce_sum", (S{"f32[N,3]"}), (Attrs{{"axes", I{}}}), "must not be empty", -1);
}

TEST_CASE("flatten merges dims but never the batch dim", "[ir][rules]") {
  CHECK(infer_str("flatten", {"f32[N,16,15,15]"}) == S{"f32[N,3600]"});
  CHECK(infer_str("flatten", {"f32[N,2,3,4]"}, {{"start_dim", int64_t{2}}}) == S{"f32[N,2,12]"});
  CHECK(infer_str("flatten", {"f32[N,2,3,4]"}, {{"start_dim", int64_t{1}}, {"end_dim", int64_t{2}}}) ==
        S{"f32[N,6,4]"});
  CHECK(infer_str("flatten", {"f32[N,5]"}, {{"start_dim", int64_t{0}}, {"end_dim", int64_t{0}}}) == S{"f32[N,5]"});
  REQUIRE_SHAPE_ERROR("flatten", (S{"f32[N,16,15,15]"}), (Attrs{{"start_dim", int64_t{0}}}),
                      "include the batch dim (index 0)", 0);
  REQUIRE_SHAPE_ERROR("flatten", (S{"f32[N,2,3]"}), (Attrs{{"start_dim", int64_t{2}}, {"end_dim", int64_t{1}}}),
                      "start_dim cannot come after end_dim", -1);
}

TEST_CASE("reshape keeps the batch dim an axis of its own", "[ir][rules]") {
  CHECK(infer_str("reshape", {"f32[N,3600]"}, {{"shape", I{-1, 16, 15, 15}}}) == S{"f32[N,16,15,15]"});
  CHECK(infer_str("reshape", {"f32[6,4]"}, {{"shape", I{2, 12}}}) == S{"f32[2,12]"});
  REQUIRE_SHAPE_ERROR("reshape", (S{"f32[N,3600]"}), (Attrs{{"shape", I{-1, 16, 6, 6}}}),
                      "expected 3600 elements per batch item, found 576", 0);
  REQUIRE_SHAPE_ERROR("reshape", (S{"f32[N,4]"}), (Attrs{{"shape", I{4, -1}}}),
                      "expected 1 elements before it, found 4", 0);
  REQUIRE_SHAPE_ERROR("reshape", (S{"f32[N,4]"}), (Attrs{{"shape", I{4}}}), "expected one -1 in 'shape'", -1);
  REQUIRE_SHAPE_ERROR("reshape", (S{"f32[2,2]"}), (Attrs{{"shape", I{-1, 4}}}), "expected no -1", -1);
}

TEST_CASE("transpose permutes dims; perm must be a permutation", "[ir][rules]") {
  CHECK(infer_str("transpose", {"f32[N,3,5]"}, {{"perm", I{0, 2, 1}}}) == S{"f32[N,5,3]"});
  REQUIRE_SHAPE_ERROR("transpose", (S{"f32[N,3,5]"}), (Attrs{{"perm", I{0, 1, 1}}}), "must be a permutation of 0..2",
                      -1);
  REQUIRE_SHAPE_ERROR("transpose", (S{"f32[N,3,5]"}), (Attrs{{"perm", I{1, 0}}}), "expected 3 entries, found 2", 0);
}

TEST_CASE("fill makes an f32 tensor of its shape attribute", "[ir][rules]") {
  CHECK(infer_str("fill", {}, {{"value", 1.0}, {"shape", I{-1, 3}}}) == S{"f32[N,3]"});
  CHECK(infer_str("fill", {}, {{"value", 1.0}, {"shape", I{}}}) == S{"f32[]"});
  REQUIRE_SHAPE_ERROR("fill", (S{}), (Attrs{{"value", 1.0}, {"shape", I{-2}}}), "expected >= -1, found -2", -1);
}

TEST_CASE("elementwise backward ops need dy and the saved tensor of one type", "[ir][rules]") {
  for (const char* op : {"relu_backward", "tanh_backward", "sigmoid_backward", "gelu_backward"}) {
    INFO(op);
    CHECK(infer_str(op, {"f32[N,8]", "f32[N,8]"}) == S{"f32[N,8]"});
    REQUIRE_SHAPE_ERROR(op, (S{"f32[N,8]", "f32[N,9]"}), {}, "expected f32[N,8], found f32[N,9]", 1);
  }
  CHECK(infer_str("leaky_relu_backward", {"f32[N,8]", "f32[N,8]"}, {{"negative_slope", 0.2}}) == S{"f32[N,8]"});
  REQUIRE_SHAPE_ERROR("leaky_relu_backward", (S{"f32[N,8]", "f32[N,8]"}), {},
                      "missing required attribute 'negative_slope'", -1);
}

TEST_CASE("softmax backward ops need an axis and matching types", "[ir][rules]") {
  for (const char* op : {"softmax_backward", "log_softmax_backward"}) {
    INFO(op);
    CHECK(infer_str(op, {"f32[N,10]", "f32[N,10]"}, {{"axis", int64_t{-1}}}) == S{"f32[N,10]"});
    REQUIRE_SHAPE_ERROR(op, (S{"f32[N,10]", "f32[N,10]"}), (Attrs{{"axis", int64_t{5}}}), "found 5", -1);
  }
}

TEST_CASE("loss backward ops give the gradient of their input", "[ir][rules]") {
  CHECK(infer_str("cross_entropy_backward", {"f32[]", "f32[N,10]", "i64[N]"}) == S{"f32[N,10]"});
  REQUIRE_SHAPE_ERROR("cross_entropy_backward", (S{"f32[]", "f32[N,10]", "f32[N]"}), {}, "expected i64, found f32", 2);
  REQUIRE_SHAPE_ERROR("cross_entropy_backward", (S{"f32[1]", "f32[N,10]", "i64[N]"}), {}, "expected [], found [1]", 0);
  CHECK(infer_str("mse_loss_backward", {"f32[]", "f32[N,3]", "f32[N,3]"}) == S{"f32[N,3]"});
  REQUIRE_SHAPE_ERROR("mse_loss_backward", (S{"f32[]", "f32[N,3]", "f32[N,2]"}), {}, "expected f32[N,3]", 2);
}

TEST_CASE("conv2d backward ops recover the input and weight shapes", "[ir][rules]") {
  Attrs common{{"stride", I{2, 2}}, {"padding", I{1, 1}}, {"dilation", I{1, 1}}, {"groups", int64_t{1}}};
  Attrs in = common;
  in["input_hw"] = I{32, 32};
  // conv2d(f32[N,3,32,32], f32[8,3,3,3], stride 2, pad 1) -> f32[N,8,16,16]
  CHECK(infer_str("conv2d_backward_input", {"f32[N,8,16,16]", "f32[8,3,3,3]"}, in) == S{"f32[N,3,32,32]"});
  REQUIRE_SHAPE_ERROR("conv2d_backward_input", (S{"f32[N,8,15,15]", "f32[8,3,3,3]"}), in,
                      "expected [N,8,16,16], found [N,8,15,15]", 0);
  Attrs w = common;
  w["kernel"] = I{3, 3};
  CHECK(infer_str("conv2d_backward_weight", {"f32[N,8,16,16]", "f32[N,3,32,32]"}, w) == S{"f32[8,3,3,3]"});
  REQUIRE_SHAPE_ERROR("conv2d_backward_weight", (S{"f32[N,8,16,16]", "f32[4,3,32,32]"}), w, "expected N, found 4", 1);
}

TEST_CASE("pooling backward ops give dx like x and check dy", "[ir][rules]") {
  Attrs a{{"kernel", I{2, 2}}, {"stride", I{2, 2}}, {"padding", I{0, 0}}};
  CHECK(infer_str("maxpool2d_backward", {"f32[N,4,5,5]", "f32[N,4,10,10]"}, a) == S{"f32[N,4,10,10]"});
  REQUIRE_SHAPE_ERROR("maxpool2d_backward", (S{"f32[N,4,4,4]", "f32[N,4,10,10]"}), a,
                      "expected f32[N,4,5,5], found f32[N,4,4,4]", 0);
  a["count_include_pad"] = false;
  CHECK(infer_str("avgpool2d_backward", {"f32[N,4,5,5]", "f32[N,4,10,10]"}, a) == S{"f32[N,4,10,10]"});
  a.erase("count_include_pad");
  REQUIRE_SHAPE_ERROR("avgpool2d_backward", (S{"f32[N,4,5,5]", "f32[N,4,10,10]"}), a,
                      "missing required attribute 'count_include_pad'", -1);
}

TEST_CASE("norm backward ops give dx, dweight, dbias", "[ir][rules]") {
  CHECK(infer_str("batchnorm2d_backward", {"f32[N,4,8,8]", "f32[N,4,8,8]", "f32[4]", "f32[4]", "f32[4]"}) ==
        S{"f32[N,4,8,8]", "f32[4]", "f32[4]"});
  REQUIRE_SHAPE_ERROR("batchnorm2d_backward", (S{"f32[N,4,8,8]", "f32[N,4,8,8]", "f32[4]", "f32[3]", "f32[4]"}), {},
                      "expected f32[4], found f32[3]", 3);
  Attrs ln{{"normalized_shape", I{32}}};
  CHECK(infer_str("layernorm_backward", {"f32[N,32]", "f32[N,32]", "f32[32]", "f32[N]", "f32[N]"}, ln) ==
        S{"f32[N,32]", "f32[32]", "f32[32]"});
  REQUIRE_SHAPE_ERROR("layernorm_backward", (S{"f32[N,32]", "f32[N,32]", "f32[32]", "f32[N,1]", "f32[N]"}), ln,
                      "expected f32[N], found f32[N,1]", 3);
}

TEST_CASE("sgd_update: one output without momentum, two with", "[ir][rules]") {
  CHECK(infer_str("sgd_update", {"f32[10,4]", "f32[10,4]"}, {{"lr", 0.1}}) == S{"f32[10,4]"});
  CHECK(infer_str("sgd_update", {"f32[10,4]", "f32[10,4]", "f32[10,4]", "f32[]"}, {{"lr", 0.1}, {"momentum", 0.9}}) ==
        S{"f32[10,4]", "f32[10,4]"});
  REQUIRE_SHAPE_ERROR("sgd_update", (S{"f32[10,4]", "f32[10,4]"}), (Attrs{{"lr", 0.1}, {"momentum", 0.9}}),
                      "expected 4 or 5 operands, found 2", -1);
  // A last scalar operand is the scheduled lr.
  CHECK(infer_str("sgd_update", {"f32[10,4]", "f32[10,4]", "f32[]"}, {{"lr", 0.1}}) == S{"f32[10,4]"});
  REQUIRE_SHAPE_ERROR("sgd_update", (S{"f32[10,4]", "f32[10,4]", "f32[2]"}), (Attrs{{"lr", 0.1}}),
                      "lr", 2);
  REQUIRE_SHAPE_ERROR("sgd_update", (S{"f32[10,4]", "f32[4,10]"}), (Attrs{{"lr", 0.1}}),
                      "expected f32[10,4], found f32[4,10]", 1);
  REQUIRE_SHAPE_ERROR("sgd_update", (S{"f32[10,4]", "f32[10,4]"}), (Attrs{{"lr", 0.1}, {"nesterov", true}}),
                      "nesterov momentum requires a momentum and zero dampening", -1);
  REQUIRE_SHAPE_ERROR("sgd_update", (S{"f32[10,4]", "f32[10,4]"}), (Attrs{{"lr", -1.0}}), "invalid lr", -1);
}

TEST_CASE("adam_update: three outputs like the param", "[ir][rules]") {
  S ok{"f32[10]", "f32[10]", "f32[10]", "f32[10]", "f32[]"};
  CHECK(infer_str("adam_update", ok, {{"decoupled", true}}) == S{"f32[10]", "f32[10]", "f32[10]"});
  S bad = ok;
  bad[3] = "f32[11]";
  REQUIRE_SHAPE_ERROR("adam_update", bad, {}, "exp_avg_sq must have the param's type; expected f32[10]", 3);
  REQUIRE_SHAPE_ERROR("adam_update", ok, (Attrs{{"beta2", 1.0}}), "invalid beta2; expected a value in [0, 1)", -1);
}
