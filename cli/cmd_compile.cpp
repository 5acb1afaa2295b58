// `dnnc compile model.dnn --emit=cpp|cuda|kir -o DIR`: runs the default pipeline and writes the
// generated source of each executable graph (train_step, infer) as DIR/<model>.<graph>.cpp (C++
// for the cpu backend), .cu (the CUDA C the cuda backend hands to NVRTC; its GEMMs are
// cuBLASLt calls made by the runtime, listed in the file's header comment) or .kir (the kernel
// IR, lowered for --target, with the CUDA thread mapping as comments for --target=cuda).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "codegen/cpp/cpp_printer.h"
#include "codegen/cuda/cuda_mapping.h"
#include "codegen/cuda/cuda_printer.h"
#include "codegen/kir/kir_printer.h"
#include "codegen/lower/lower.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/stats.h"

namespace dnnc::cli {
namespace {

namespace fs = std::filesystem;

struct CompileOptions {
  std::string file;
  std::string emit = "cpp";
  std::string out_dir;
  int64_t batch = 0;  // 0: the train block's batch, or 1 without one
  std::vector<std::string> graphs;
  std::string target = "cpu";  // select-layout's target
  std::string layout = "auto";  // select-layout's choice: the cost model, or forced nchw / nhwc
  std::string dump_ir_after;   // print the IR to stderr after this pass ("all": after each)
  bool stats = false;          // print kernel and memory figures per graph
};

std::string mib(int64_t bytes) { return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20)); }

int64_t batch_of(const ir::Module& m, const CompileOptions& o) {
  return o.batch > 0 ? o.batch : (m.train.batch > 0 ? m.train.batch : 1);
}

codegen::LowerOptions lower_options(const CompileOptions& o) {
  return o.target == "cuda" ? codegen::cuda_lower_options() : codegen::LowerOptions{};
}

// What the backend of `o.target` runs for graph `g`: its steps, and the activation arena that
// plan-memory laid out (the bytes the backend allocates).
std::string lowered_stats(const ir::Module& m, const ir::Graph& g, const CompileOptions& o) {
  codegen::Program p;
  try {
    p = codegen::lower_graph(m, g, batch_of(m, o), lower_options(o));
  } catch (const std::runtime_error& e) {  // a user-facing lowering error; internal errors propagate
    return fmt::format("  codegen ({}): cannot lower: {}\n", o.target, e.what());
  }
  int gemms = 0;
  for (const codegen::Step& s : p.steps) gemms += s.kind == codegen::Step::Kind::gemm;
  const codegen::ArenaPlan& a = p.arena;
  auto ratio = [](int64_t x, int64_t y) { return y > 0 ? static_cast<double>(x) / static_cast<double>(y) : 0.0; };
  return fmt::format(
      "  codegen ({}): {} steps ({} kernels, {} GEMMs)\n"
      "  plan-memory ({}): arena {} bytes = {} (buffers apart {} = {:.0f}%, max-live {} = {:.3f}x) at batch {}\n",
      o.target, p.steps.size(), p.steps.size() - static_cast<size_t>(gemms), gemms, o.target, a.bytes, mib(a.bytes),
      mib(a.naive_bytes), 100 * ratio(a.bytes, a.naive_bytes), mib(a.max_live_bytes), ratio(a.bytes, a.max_live_bytes),
      p.batch);
}

// Runs the default pipeline for `o.target`, printing the IR after a pass (--dump-ir-after) and
// the per-graph figures (--stats) as asked.
int run_compile_pipeline(ir::Module& m, const CompileOptions& o, passes::PipelineOptions& p) {
  passes::LayoutReport layout;
  if (!o.dump_ir_after.empty()) {
    const std::vector<std::string> names = passes::pass_names();
    if (o.dump_ir_after != "all" && std::find(names.begin(), names.end(), o.dump_ir_after) == names.end())
      throw std::invalid_argument(fmt::format("unknown pass '{}' in --dump-ir-after (known passes: {})",
                                              o.dump_ir_after, fmt::join(names, ", ")));
    p.after_pass = [&](const std::string& pass, const ir::Module& mod, bool changed) {
      if (o.dump_ir_after == "all" || o.dump_ir_after == pass)
        std::cerr << fmt::format("// ----- IR after {}{} -----\n", pass, changed ? "" : " (unchanged)")
                  << ir::print(mod);
    };
  }
  passes::compile(m, {.target = &passes::find_target(o.target), .layout_report = &layout,
                         .layout = passes::parse_layout_choice(o.layout),
                         .pipeline = p});
  if (o.stats) std::cout << passes::format_stats(m, &layout, [&](const ir::Graph& g) { return lowered_stats(m, g, o); });
  return 0;
}

int run_compile(const CompileOptions& o) {
  ir::Module m = load_module(o.file);
  ir::verify(m);
  if (o.out_dir.empty() && !o.stats)
    throw std::invalid_argument("compile: -o DIR is required (or --stats to print figures only)");
  if (!o.out_dir.empty() && o.emit == "cpp" && o.target != "cpu")
    throw std::invalid_argument(
        fmt::format("compile: --emit=cpp generates the cpu target's code; --target={} is "
                    "only for --stats and --dump-ir-after (without -o)",
                    o.target));
  passes::PipelineOptions pipeline;
  run_compile_pipeline(m, o, pipeline);
  if (o.out_dir.empty()) return 0;
  const int64_t batch = batch_of(m, o);
  std::vector<std::string> graphs = o.graphs.empty() ? std::vector<std::string>{"train_step", "infer"} : o.graphs;
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create output directory {}: {}", o.out_dir, ec.message()));
  std::string stem = fs::path(o.file).stem().string();
  for (const std::string& name : graphs) {
    const ir::Graph* g = m.graph(name);
    if (!g) {
      if (!o.graphs.empty()) throw std::invalid_argument(fmt::format("model {} has no graph '{}'", m.name, name));
      continue;  // e.g. a model without a loss has no train_step
    }
    std::string source;
    if (o.emit == "cuda") {
      source = codegen::print_cuda_file(codegen::lower_graph(m, *g, batch, codegen::cuda_lower_options()));
    } else if (o.emit == "kir") {
      codegen::Program p = codegen::lower_graph(m, *g, batch, lower_options(o));
      source = codegen::print_kir(p, o.target == "cuda" ? codegen::cuda_mapping_notes(p) : codegen::KirNotes{});
    } else {
      source = codegen::print_program_cpp(codegen::lower_graph(m, *g, batch));
    }
    const char* ext = o.emit == "cuda" ? "cu" : o.emit == "kir" ? "kir" : "cpp";
    fs::path path = fs::path(o.out_dir) / fmt::format("{}.{}.{}", stem, name, ext);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << source;
    if (!out.flush()) throw std::runtime_error(fmt::format("cannot write {}", path.string()));
    std::cout << fmt::format("wrote {} ({} bytes, batch {})\n", path.string(), source.size(), batch);
  }
  return 0;
}

}  // namespace

void add_compile_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand("compile", "Generate the kernels' source of a model (after the default pipeline)");
  cmd->add_option("file", o->file, "model file (.dnn, or .ir text)")->required();
  cmd->add_option("--emit", o->emit,
                  "what to generate: cpp (cpu backend), cuda (CUDA C for NVRTC) or kir (the kernel IR, for --target)")
      ->check(CLI::IsMember({"cpp", "cuda", "kir"}));
  cmd->add_option("-o,--output", o->out_dir, "directory for <model>.<graph>.cpp|.cu|.kir (required unless --stats)");
  cmd->add_option("--batch", o->batch, "batch size to specialise for (default: the train block's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--graph", o->graphs, "graphs to generate (default: train_step and infer)");
  cmd->add_flag("--stats", o->stats,
                "print per graph: kernels before -> after fusion, fusion groups, layout choices, the lowered "
                "steps and the activation arena the --target backend allocates");
  cmd->add_option("--target", o->target,
                  "target of select-layout's cost model and of --emit=kir's lowering (cpu; cuda: not with --emit=cpp)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--layout", o->layout, "activation layout: auto (the target's cost model), nchw or nhwc (forced)")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}));
  cmd->add_option("--dump-ir-after", o->dump_ir_after, "print the IR to stderr after this pass ('all': every pass)");
  cmd->callback([&run, o] { run = [o] { return guarded([&] { return run_compile(*o); }); }; });
}

}  // namespace dnnc::cli
