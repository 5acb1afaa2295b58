// The `dnnc` command line: compile --stats, --dump-ir-after, --target, and their errors;
// --tf32 of train, eval and infer (with a GPU-free stand-in for the cuda plugin).
#include <sys/wait.h>
#include <unistd.h>

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

// Runs `ENV dnnc ARGS` (ENV: shell variable assignments, may be empty).
Result run_env(const std::string& env, const std::string& args) {
  Result r;
  // DNNC_POISON_ARENA=1: the arena checking mode, as every backend run of the suite.
  std::string cmd = "DNNC_POISON_ARENA=1 " + env + " " + std::string(DNNC_EXE) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

Result run(const std::string& args) { return run_env("", args); }

// The fake cuda plugin (fake_cuda_plugin.cpp) instead of the real one; with `unavailable`, its
// probe reports that reason.
std::string fake_cuda(const std::string& unavailable = "") {
  std::string env = std::string("DNNC_PLUGIN_DIR=") + DNNC_FAKE_CUDA_PLUGIN_DIR;
  if (!unavailable.empty()) env += " DNNC_FAKE_CUDA_UNAVAILABLE='" + unavailable + "'";
  return env;
}

// Arguments of train, eval and infer that get past option parsing and device selection and then
// fail on a missing file, so the tests need no data and run nothing.
const char* const kMissing = "/nonexistent/dnnc-cli-tf32-test";
std::string train_args(const std::string& extra) {
  return std::string("train models/mnist_mlp.dnn --data ") + kMissing + " " + extra;
}
std::string eval_args(const std::string& extra) {
  return std::string("eval models/mnist_mlp.dnn --init ") + kMissing + ".safetensors --data " + kMissing + " " + extra;
}
std::string infer_args(const std::string& extra) {
  return std::string("infer models/mnist_mlp.dnn --init ") + kMissing + ".safetensors --images " + kMissing + ".idx " +
         extra;
}

}  // namespace

TEST_CASE("compile --stats prints kernels, fusion groups and arena figures per graph", "[cli]") {
  Result r = run("compile models/mnist_mlp.dnn --stats");
  INFO(r.out);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("train_step: kernels 25 -> 10\n"));
  CHECK_THAT(r.out, Catch::Contains("  codegen (cpu): "));
  CHECK_THAT(r.out, Catch::Contains("  plan-memory (cpu): arena "));
  CHECK_THAT(r.out, Catch::Contains("  fuse: linear_epilogue x2 (4 nodes), softmax_xent x1 (4 nodes), matmul_epilogue "
                                    "x2 (6 nodes), multi_tensor_update x1 (7 nodes)\n"));
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
             Catch::Contains("// ----- IR after autodiff") && Catch::Contains("// ----- IR after schedule"));
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
  CHECK_THAT(src, Catch::Contains("cuBLASLt GEMM m=128 n=512 k=784 B^T epilogue RELU_AUX_BIAS mask 0"));
  // fc1's input gradient reads fc1's ReLU mask and sums fc1's bias gradient in cuBLASLt; its
  // generated kernels stay in the file for when cuBLASLt has no algorithm for that.
  CHECK_THAT(src, Catch::Contains("cuBLASLt GEMM m=128 n=512 k=256 epilogue DRELU_BGRAD mask 0"));
  CHECK_THAT(src, Catch::Contains("(column sums, unless cuBLASLt does it)"));
  CHECK_THAT(src, Catch::Contains("extern \"C\" __global__"));
  CHECK_THAT(src, !Catch::Contains("#include"));
  Result bad = run("compile models/mnist_mlp.dnn --emit=ptx -o " + dir);
  CHECK(bad.code != 0);
  std::system(cleanup.c_str());
}

TEST_CASE("train, eval and infer take --tf32 and document it in --help", "[cli][tf32]") {
  for (const char* cmd : {"train", "eval", "infer"}) {
    Result r = run(std::string(cmd) + " --help");
    INFO(cmd << ": " << r.out);
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("--tf32") &&
                          Catch::Contains("cuda only: run GEMMs in TF32 (faster, about 1e-3 relative error)"));
  }
}

TEST_CASE("train, eval and infer: --tf32 with --device cpu or reference is a usage error before anything runs",
          "[cli][tf32]") {
  for (const std::string& args :
       {train_args("--device cpu --tf32"), eval_args("--device reference --tf32"), infer_args("--tf32 --device cpu")}) {
    Result r = run_env(fake_cuda(), args);
    INFO(args << "\n" << r.out);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("dnnc: error: --tf32 applies to the cuda device only, but --device is "));
    CHECK_THAT(r.out, !Catch::Contains("device: ") && !Catch::Contains("fake cuda plugin"));
  }
  // train fails before it compiles and prints the model.
  Result r = run(train_args("--device cpu --tf32"));
  CHECK(r.out == "dnnc: error: --tf32 applies to the cuda device only, but --device is cpu\n");
  // Without --tf32 the same command gets past the device and fails on the data instead.
  Result plain = run(train_args("--device reference"));
  CHECK(plain.code == 1);
  CHECK_THAT(plain.out, Catch::Contains("device: reference (as requested)\n") && !Catch::Contains("--tf32"));
}

TEST_CASE("train, eval and infer: --device auto --tf32 without a usable cuda device warns once, runs exact fp32",
          "[cli][tf32]") {
  for (const std::string& args : {train_args("--device auto --tf32"), eval_args("--tf32"), infer_args("--tf32")}) {
    Result r = run_env(fake_cuda("fake: no device"), args);
    INFO(args << "\n" << r.out);
    CHECK_THAT(r.out, Catch::Contains(" (auto: cuda: fake: no device"));
    CHECK_THAT(r.out, Catch::Contains("dnnc: warning: --tf32 ignored: --device auto chose "));
    CHECK_THAT(r.out, Catch::Contains("GEMMs run in exact fp32\n"));
    CHECK_THAT(r.out, !Catch::Contains("fake cuda plugin: create") && !Catch::Contains("TF32 GEMMs"));
    // It went on past the device: the error is the missing data or checkpoint, exit 1.
    CHECK(r.code == 1);
    CHECK_THAT(r.out, Catch::Contains(kMissing));
  }
  Result once = run_env(fake_cuda("fake: no device"), train_args("--tf32"));
  size_t first = once.out.find("dnnc: warning:");
  CHECK(first != std::string::npos);
  CHECK(once.out.find("dnnc: warning:", first + 1) == std::string::npos);
}

TEST_CASE("train, eval and infer: --tf32 reaches the cuda plugin and the device line names the GEMM mode",
          "[cli][tf32]") {
  Result r = run_env(fake_cuda(), train_args("--device cuda --tf32"));
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains("fake cuda plugin: create(tf32=1, epilogues=on, gemm_algo=heuristic)"));
  CHECK_THAT(r.out, Catch::Contains("device: cuda (as requested), TF32 GEMMs\n"));
  CHECK_THAT(r.out, !Catch::Contains("warning"));
  Result plain = run_env(fake_cuda(), train_args(""));
  INFO(plain.out);
  CHECK_THAT(plain.out, Catch::Contains("fake cuda plugin: create(tf32=0, epilogues=on, gemm_algo=heuristic)"));
  CHECK_THAT(plain.out, Catch::Contains("device: cuda (auto: the preferred one), exact fp32 GEMMs\n"));
  Result eval = run_env(fake_cuda(), eval_args("--device auto --tf32"));
  INFO(eval.out);
  CHECK_THAT(eval.out, Catch::Contains("fake cuda plugin: create(tf32=1, epilogues=on, gemm_algo=heuristic)") &&
                           Catch::Contains("device: cuda (auto: the preferred one), TF32 GEMMs\n"));
  Result infer = run_env(fake_cuda(), infer_args("--device cuda --tf32 --json"));
  INFO(infer.out);
  CHECK_THAT(infer.out, Catch::Contains("fake cuda plugin: create(tf32=1, epilogues=on, gemm_algo=heuristic)") &&
                            Catch::Contains("device: cuda (as requested), TF32 GEMMs\n"));
}

// The cuBLASLt choices are BackendOptions; the CLI (not the backend) reads the documented
// environment variables into them, and rejects other values before anything runs.
TEST_CASE("DNNC_CUBLASLT_EPILOGUES and DNNC_CUBLASLT_ALGO reach the cuda plugin as options, checked by the CLI",
          "[cli][cuda]") {
  Result r = run_env(fake_cuda() + " DNNC_CUBLASLT_EPILOGUES=log DNNC_CUBLASLT_ALGO=tune", train_args("--device cuda"));
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains("fake cuda plugin: create(tf32=0, epilogues=log, gemm_algo=tune)"));
  Result bad = run_env(fake_cuda() + " DNNC_CUBLASLT_EPILOGUES=maybe", train_args("--device cuda"));
  INFO(bad.out);
  CHECK(bad.code == 2);
  CHECK_THAT(bad.out, Catch::Contains("DNNC_CUBLASLT_EPILOGUES is 'maybe'; expected on, off or log") &&
                          !Catch::Contains("fake cuda plugin: create"));
  Result algo = run_env(fake_cuda() + " DNNC_CUBLASLT_ALGO=fastest", train_args("--device cuda"));
  CHECK(algo.code == 2);
  CHECK_THAT(algo.out, Catch::Contains("DNNC_CUBLASLT_ALGO is 'fastest'; expected heuristic or tune"));
}

// Usage errors exit 2 (docs/training.md), with a did-you-mean where a known name is close.
TEST_CASE("usage slips exit 2 and suggest the command or option meant", "[cli][usage]") {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"trian models/mnist_mlp.dnn", "unknown command 'trian'; did you mean 'train'? (commands: check, dump-ir"},
           Case{"frobnicate", "unknown command 'frobnicate' (commands: "},
           Case{"train models/mnist_mlp.dnn --epoch 2", "unknown option '--epoch' for dnnc train; did you mean '--epochs'?"},
           Case{"data synth-cifar /tmp/dnnc_usage --trian 5",
                "unknown option '--trian' for dnnc data synth-cifar; did you mean '--train'?"},
           Case{"train models/mnist_mlp.dnn --device gpu", "--device: gpu not in {auto,cpu,cuda,reference}"},
           Case{"", "A subcommand is required"},
       }) {
    Result r = run(c.args);
    INFO(c.args << "\n" << r.out);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains(std::string("dnnc: error: ") + c.message));
  }
  Result help = run("check --help");
  CHECK(help.code == 0);
  Result version = run("--version");
  CHECK(version.code == 0);
  CHECK_THAT(version.out, Catch::Contains("dnnc 0.1.0"));
}

TEST_CASE("the recipe line names Adam's betas and counts epochs in the singular", "[cli][usage]") {
  Result r = run(std::string("train models/mnist_mlp_adam.dnn --data ") + kMissing + " --epochs 1");
  INFO(r.out);
  CHECK_THAT(r.out, Catch::Contains("recipe: adam lr 0.001 beta1 0.9 beta2 0.999 eps 1e-08, batch 128, 1 epoch, seed 1\n"));
  Result two = run(train_args("--epochs 2"));
  CHECK_THAT(two.out, Catch::Contains(", 2 epochs, seed "));
}

// Output paths are checked (and missing folders made) before the model is even compiled, so a
// slip in --save or --log costs no training run.
TEST_CASE("train checks --save and --log before any work: folders made, a folder or a file as parent refused",
          "[cli][usage]") {
  std::string dir = "/tmp/dnnc_cli_outputs_" + std::to_string(::getpid());
  REQUIRE(std::system(("rm -rf " + dir + " && mkdir -p " + dir + " && touch " + dir + "/plain").c_str()) == 0);
  // Data that does not exist: the run fails at loading, after the output checks.
  Result made = run(train_args("--save " + dir + "/run/a.safetensors --log " + dir + "/logs/x.jsonl"));
  INFO(made.out);
  CHECK_THAT(made.out, Catch::Contains("created folder " + dir + "/run for --save") &&
                           Catch::Contains("created folder " + dir + "/logs for --log"));
  CHECK(std::system(("test -d " + dir + "/run && test -d " + dir + "/logs").c_str()) == 0);
  Result folder = run(train_args("--save " + dir + "/run"));
  CHECK(folder.code == 2);
  CHECK_THAT(folder.out, Catch::Contains("dnnc: error: --save " + dir + "/run: is a folder; give a file in it, e.g. " +
                                         dir + "/run/model.safetensors") &&
                             !Catch::Contains("model MnistMLP"));
  Result file_parent = run(train_args("--log " + dir + "/plain/x.jsonl"));
  CHECK(file_parent.code == 2);
  CHECK_THAT(file_parent.out, Catch::Contains("--log " + dir + "/plain/x.jsonl: " + dir + "/plain is not a folder"));
  Result resume = run(train_args("--resume " + dir + "/missing.safetensors"));
  CHECK_THAT(resume.out, Catch::Contains("warning: --resume " + dir +
                                         "/missing.safetensors without --save: the continued run will not be saved"));
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("epochs may come from --epochs instead of the train block", "[cli][usage]") {
  Result check = run("check tests/trainer/no_epochs.dnn");
  INFO(check.out);
  CHECK(check.code == 0);
  Result none = run(std::string("train tests/trainer/no_epochs.dnn --data ") + kMissing);
  CHECK(none.code == 2);
  CHECK_THAT(none.out, Catch::Contains("dnnc: error: tests/trainer/no_epochs.dnn: the train block of Net sets no "
                                       "epochs; add 'epochs = N' to it or pass --epochs N"));
  Result given = run(std::string("train tests/trainer/no_epochs.dnn --epochs 3 --data ") + kMissing);
  CHECK_THAT(given.out, Catch::Contains(", 3 epochs, seed 0") &&
                           Catch::Contains(std::string("--data ") + kMissing + ": no such folder"));
}

TEST_CASE("dump-ir --graph names the pass that makes a graph missing at the chosen point", "[cli][usage]") {
  Result early = run("dump-ir models/mnist_mlp.dnn --graph=infer");
  INFO(early.out);
  CHECK(early.code == 2);
  CHECK_THAT(early.out, Catch::Contains("dnnc: error: --graph infer: no graph of that name after the frontend (there: "
                                        "forward); pass derive-infer makes it: add --after derive-infer (or a later "
                                        "pass, or --after all)"));
  Result after = run("dump-ir models/mnist_mlp.dnn --graph=infer --after autodiff");
  CHECK_THAT(after.out, Catch::Contains("after pass autodiff (there: forward, train_step); pass derive-infer makes it"));
  Result unknown = run("dump-ir models/mnist_mlp.dnn --graph=inference");
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.out, Catch::Contains("--graph inference: no graph of that name; after all passes the graphs are "
                                          "forward, train_step, infer"));
  Result all = run("dump-ir models/mnist_mlp.dnn --graph=infer --after all");
  CHECK(all.code == 0);
  CHECK_THAT(all.out, Catch::Contains("// --graph infer: no graph of that name after pass autodiff") &&
                          Catch::Contains("// ----- IR after derive-infer -----\ngraph infer("));
  Result ok = run("dump-ir models/mnist_mlp.dnn --graph=infer --after derive-infer");
  CHECK(ok.code == 0);
  CHECK_THAT(ok.out, Catch::StartsWith("graph infer("));
}

TEST_CASE("check and train count parameters as PyTorch does, buffers apart", "[cli][usage]") {
  Result mlp = run("check models/mnist_mlp.dnn");
  CHECK(mlp.out == "models/mnist_mlp.dnn: ok: model MnistMLP, 535818 parameters (6 tensors)\n");
  // ResNetMnist (PyTorch mirror: tests/golden/golden_float64.py): sum(p.numel() for p in
  // model.parameters()) = 28410 in 20 tensors; its 6 batchnorms' buffers (running mean and var
  // over 144 channels, 6 counters) are 294 values in 18 tensors.
  Result bn = run("check models/resnet_mnist.dnn");
  CHECK_THAT(bn.out, Catch::Contains("28410 parameters (20 tensors) and 294 buffer values (18 tensors)"));
  Result train = run(train_args("--epochs 1"));
  CHECK_THAT(train.out, Catch::Contains("model MnistMLP (models/mnist_mlp.dnn): 535818 parameters (6 tensors)\n"));
}
