// Shape rules of the layer ops: linear, matmul, conv2d, pooling, dropout, norms and losses.
#include <catch2/catch.hpp>

#include "registry_helpers.h"

using namespace dnnc::ir;
using namespace dnnc::ir::test;
using S = std::vector<std::string>;
using I = std::vector<int64_t>;

TEST_CASE("linear: [..., in] x [out, in] -> [..., out]; a feature mismatch blames the weight", "[ir][rules]") {
  CHECK(infer_str("linear", {"f32[N,3600]", "f32[10,3600]", "f32[10]"}) == S{"f32[N,10]"});
  CHECK(infer_str("linear", {"f32[N,7,64]", "f32[32,64]"}) == S{"f32[N,7,32]"});
  CHECK(infer_str("linear", {"f32[N,64]", "f32[32,64]{col_major}"}) == S{"f32[N,32]"});
  REQUIRE_SHAPE_ERROR("linear", (S{"f32[N,3600]", "f32[10,576]", "f32[10]"}), {},
                      "linear: input has 3600 features but weight expects 576 (in_features); expected 3600, found 576",
                      1);
  REQUIRE_SHAPE_ERROR("linear", (S{"f32[N,8]", "f32[10,8]", "f32[12]"}), {}, "expected [10], found [12]", 2);
  REQUIRE_SHAPE_ERROR("linear", (S{"f32[8]", "f32[10,8]"}), {}, "expected rank >= 2, found rank 1", 0);
  REQUIRE_SHAPE_ERROR("linear", (S{"i64[N,8]", "f32[10,8]"}), {}, "expected f32, found i64", 0);
}

TEST_CASE("matmul: inner dims must agree, honouring the transpose flags", "[ir][rules]") {
  CHECK(infer_str("matmul", {"f32[N,4]", "f32[4,7]"}) == S{"f32[N,7]"});
  CHECK(infer_str("matmul", {"f32[N,10]", "f32[N,64]"}, {{"transpose_a", true}}) == S{"f32[10,64]"});
  CHECK(infer_str("matmul", {"f32[N,64]", "f32[10,64]"}, {{"transpose_b", true}}) == S{"f32[N,10]"});
  REQUIRE_SHAPE_ERROR("matmul", (S{"f32[N,4]", "f32[5,7]"}), {}, "expected 4, found 5", 1);
  REQUIRE_SHAPE_ERROR("matmul", (S{"f32[2,3,4]", "f32[4,7]"}), {}, "expected rank 2, found rank 3", 0);
}

TEST_CASE("conv2d: PyTorch's output size formula and channel checks", "[ir][rules]") {
  CHECK(infer_str("conv2d", {"f32[N,3,32,32]", "f32[16,3,3,3]", "f32[16]"}) == S{"f32[N,16,30,30]"});
  Attrs a{{"stride", I{2, 2}}, {"padding", I{1, 1}}, {"dilation", I{2, 2}}};
  // (32 + 2 - 2*2 - 1)/2 + 1 = 15
  CHECK(infer_str("conv2d", {"f32[N,3,32,32]", "f32[8,3,3,3]"}, a) == S{"f32[N,8,15,15]"});
  CHECK(infer_str("conv2d", {"f32[N,4,9,9]", "f32[6,2,3,3]"}, {{"groups", int64_t{2}}}) == S{"f32[N,6,7,7]"});
  CHECK(infer_str("conv2d", {"f32[N,3,8,8]{nhwc}", "f32[4,3,3,3]"}) == S{"f32[N,4,6,6]{nhwc}"});
  REQUIRE_SHAPE_ERROR("conv2d", (S{"f32[N,1,28,28]", "f32[16,3,3,3]"}), {},
                      "input has 1 channels but weight expects 3 (in_channels); expected 1, found 3", 1);
  REQUIRE_SHAPE_ERROR("conv2d", (S{"f32[N,3,2,2]", "f32[16,3,3,3]"}), {}, "expected padded height >= 3, found 2", 0);
  REQUIRE_SHAPE_ERROR("conv2d", (S{"f32[N,3,8,8]", "f32[16,3,3,3]", "f32[8]"}), {}, "expected [16], found [8]", 2);
  REQUIRE_SHAPE_ERROR("conv2d", (S{"f32[N,3,8,8]", "f32[16,3,3,3]"}), (Attrs{{"stride", I{1}}}),
                      "attribute 'stride' must have 2 entries; expected 2, found 1", -1);
  REQUIRE_SHAPE_ERROR("conv2d", (S{"f32[N,3,8,8]", "f32[16,3,3,3]"}), (Attrs{{"groups", int64_t{2}}}),
                      "expected a multiple of 2, found 3", 0);
}

TEST_CASE("maxpool2d: floor-mode output, stride defaults to the kernel", "[ir][rules]") {
  CHECK(infer_str("maxpool2d", {"f32[N,16,30,30]"}, {{"kernel", I{2, 2}}}) == S{"f32[N,16,15,15]"});
  CHECK(infer_str("maxpool2d", {"f32[N,16,31,31]"}, {{"kernel", I{2, 2}}}) == S{"f32[N,16,15,15]"});
  CHECK(infer_str("maxpool2d", {"f32[N,1,7,7]"}, {{"kernel", I{3, 3}}, {"stride", I{1, 1}}, {"padding", I{1, 1}}}) ==
        S{"f32[N,1,7,7]"});
  REQUIRE_SHAPE_ERROR("maxpool2d", (S{"f32[N,16,1,1]"}), (Attrs{{"kernel", I{2, 2}}}),
                      "expected padded height >= 2, found 1", 0);
  REQUIRE_SHAPE_ERROR("maxpool2d", (S{"f32[N,16,8,8]"}), (Attrs{{"kernel", I{2, 2}}, {"padding", I{2, 2}}}),
                      "padding should be at most half of the kernel size; expected <= 1, found 2", -1);
}

TEST_CASE("avgpool2d: same window rule as maxpool2d", "[ir][rules]") {
  CHECK(infer_str("avgpool2d", {"f32[N,8,10,10]"}, {{"kernel", I{3, 3}}, {"stride", I{2, 2}}}) == S{"f32[N,8,4,4]"});
  REQUIRE_SHAPE_ERROR("avgpool2d", (S{"f32[N,8,10]"}), (Attrs{{"kernel", I{3, 3}}}), "expected rank 4, found rank 3",
                      0);
}

TEST_CASE("dropout: y and mask like x; p must be a probability", "[ir][rules]") {
  CHECK(infer_str("dropout", {"f32[N,128]", "f32[]"}, {{"p", 0.25}}) == S{"f32[N,128]", "f32[N,128]"});
  REQUIRE_SHAPE_ERROR("dropout", (S{"f32[N,128]", "f32[]"}), (Attrs{{"p", 1.5}}), "expected p in [0, 1], found 1.5",
                      -1);
  REQUIRE_SHAPE_ERROR("dropout", (S{"f32[N,128]", "f32[1]"}), {}, "step has the wrong shape; expected [], found [1]",
                      1);
}

TEST_CASE("batchnorm2d: per-channel operands, five outputs", "[ir][rules]") {
  S ok{"f32[N,16,8,8]", "f32[16]", "f32[16]", "f32[16]", "f32[16]"};
  CHECK(infer_str("batchnorm2d", ok) == S{"f32[N,16,8,8]", "f32[16]", "f32[16]", "f32[16]", "f32[16]"});
  S bad = ok;
  bad[3] = "f32[8]";
  REQUIRE_SHAPE_ERROR("batchnorm2d", bad, {},
                      "running_mean (one entry per channel) has the wrong shape; "
                      "expected [16], found [8]",
                      3);
}

TEST_CASE("batchnorm2d_infer: y like x", "[ir][rules]") {
  CHECK(infer_str("batchnorm2d_infer", {"f32[N,4,8,8]", "f32[4]", "f32[4]", "f32[4]", "f32[4]"}) == S{"f32[N,4,8,8]"});
  REQUIRE_SHAPE_ERROR("batchnorm2d_infer", (S{"f32[N,4,8,8]", "f32[5]", "f32[4]", "f32[4]", "f32[4]"}), {},
                      "expected [4], found [5]", 1);
}

TEST_CASE("layernorm: x must end in normalized_shape; stats over the leading dims", "[ir][rules]") {
  CHECK(infer_str("layernorm", {"f32[N,7,32]", "f32[32]", "f32[32]"}, {{"normalized_shape", I{32}}}) ==
        S{"f32[N,7,32]", "f32[N,7]", "f32[N,7]"});
  REQUIRE_SHAPE_ERROR("layernorm", (S{"f32[N,7,32]", "f32[32]", "f32[32]"}), (Attrs{{"normalized_shape", I{16}}}),
                      "expected [*,16], found [N,7,32]", 0);
  REQUIRE_SHAPE_ERROR("layernorm", (S{"f32[N,32]", "f32[32]", "f32[31]"}), (Attrs{{"normalized_shape", I{32}}}),
                      "expected [32], found [31]", 2);
}

TEST_CASE("cross_entropy: logits [B, C] and i64 targets [B] give a scalar", "[ir][rules]") {
  CHECK(infer_str("cross_entropy", {"f32[N,10]", "i64[N]"}) == S{"f32[]"});
  REQUIRE_SHAPE_ERROR("cross_entropy", (S{"f32[N,10]", "f32[N]"}), {}, "expected i64, found f32", 1);
  REQUIRE_SHAPE_ERROR("cross_entropy", (S{"f32[4,10]", "i64[3]"}), {}, "expected 4, found 3", 1);
  REQUIRE_SHAPE_ERROR("cross_entropy", (S{"f32[N,10,2]", "i64[N]"}), {}, "expected rank 2, found rank 3", 0);
}

TEST_CASE("mse_loss: same shapes give a scalar", "[ir][rules]") {
  CHECK(infer_str("mse_loss", {"f32[N,3]", "f32[N,3]"}) == S{"f32[]"});
  REQUIRE_SHAPE_ERROR("mse_loss", (S{"f32[N,3]", "f32[N,4]"}), {}, "expected [N,3], found [N,4]", 1);
}
