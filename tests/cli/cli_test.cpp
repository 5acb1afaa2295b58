// The `dnnc` command line: compile --stats, --dump-ir-after, --target, and their errors.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr together
};

Result run(const std::string& args) {
  Result r;
  std::string cmd = std::string(DNNC_EXE) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST_CASE("compile --stats prints kernels and arena figures per graph", "[cli]") {
  Result r = run("compile models/mnist_mlp.dnn --stats");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("train_step: kernels 25 -> 10; arena "));
  CHECK_THAT(r.out, Catch::Contains("infer: kernels "));
  CHECK_THAT(r.out, Catch::Contains("max-live"));
  CHECK_THAT(r.out, Catch::Contains("select-layout (cpu): transposes 0 -> 0"));
}

TEST_CASE("compile --stats --target=cuda reports the NHWC decision", "[cli]") {
  Result r = run("compile tests/passes/layout/nhwc_cnn.dnn --stats --target=cuda");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("select-layout (cuda)") && Catch::Contains("1 of 1 activation regions nhwc"));
  Result cpu = run("compile tests/passes/layout/nhwc_cnn.dnn --stats");
  CHECK_THAT(cpu.out, Catch::Contains("0 of 1 activation regions nhwc"));
}

TEST_CASE("compile --dump-ir-after prints the IR after that pass only", "[cli]") {
  Result r = run("compile models/cifar_cnn.dnn --stats --dump-ir-after=select-layout");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("// ----- IR after select-layout"));
  CHECK_THAT(r.out, !Catch::Contains("// ----- IR after fuse"));
  Result all = run("compile models/cifar_cnn.dnn --stats --dump-ir-after=all");
  CHECK_THAT(all.out,
             Catch::Contains("// ----- IR after autodiff") && Catch::Contains("// ----- IR after plan-memory"));
}

TEST_CASE("dump-ir takes --dump-ir-after as --after", "[cli]") {
  Result a = run("dump-ir models/mnist_mlp.dnn --dump-ir-after=select-layout --graph=infer");
  Result b = run("dump-ir models/mnist_mlp.dnn --after=select-layout --graph=infer");
  CHECK(a.code == 0);
  CHECK(a.out == b.out);
}

TEST_CASE("bad pass and target names are errors with a non-zero exit", "[cli]") {
  Result r = run("compile models/mnist_mlp.dnn --stats --dump-ir-after=fusee");
  CHECK(r.code != 0);
  CHECK_THAT(r.out, Catch::Contains("unknown pass 'fusee'"));
  Result t = run("dump-ir models/mnist_mlp.dnn --after=fuse --target=tpu");
  CHECK(t.code != 0);
  CHECK_THAT(t.out, Catch::Contains("tpu"));
  Result o = run("compile models/mnist_mlp.dnn --target=cuda -o /tmp/dnnc_cli_test_out");
  CHECK(o.code != 0);
  CHECK_THAT(o.out, Catch::Contains("--target=cuda"));
  Result none = run("compile models/mnist_mlp.dnn");
  CHECK(none.code != 0);
  CHECK_THAT(none.out, Catch::Contains("-o DIR is required"));
}

TEST_CASE("compile --emit=cuda writes the CUDA C of each graph with its launch order", "[cli]") {
  std::string dir = "build-cli-emit-cuda-test";
  std::string cleanup = "rm -rf " + dir;
  REQUIRE(std::system(cleanup.c_str()) == 0);
  Result r = run("compile models/mnist_mlp.dnn --emit=cuda -o " + dir);
  INFO(r.out);
  CHECK(r.code == 0);
  FILE* f = std::fopen((dir + "/mnist_mlp.train_step.cu").c_str(), "rb");
  REQUIRE(f);
  std::string src;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) src.append(buf.data(), n);
  std::fclose(f);
  // The MLP's first GEMM (batch 128 x 784 -> 512) is a cuBLASLt call; its kernels are __global__.
  CHECK_THAT(src, Catch::Contains("cuBLASLt GEMM m=128 n=512 k=784"));
  CHECK_THAT(src, Catch::Contains("extern \"C\" __global__"));
  CHECK_THAT(src, !Catch::Contains("#include"));
  Result bad = run("compile models/mnist_mlp.dnn --emit=ptx -o " + dir);
  CHECK(bad.code != 0);
  std::system(cleanup.c_str());
}
