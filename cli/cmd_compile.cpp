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
  std::string dump_ir_after;   // print the IR to stderr after this pass ("all": after each)
  bool stats = false;          // print kernel and memory figures per graph
};

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
  passes::compile(m, {.target = &passes::find_target(o.target), .layout_report = &layout, .pipeline = p});
  if (o.stats) std::cout << passes::format_stats(m, &layout);
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
  int64_t batch = o.batch > 0 ? o.batch : (m.train.batch > 0 ? m.train.batch : 1);
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
      const bool cuda = o.target == "cuda";
      codegen::Program p =
          codegen::lower_graph(m, *g, batch, cuda ? codegen::cuda_lower_options() : codegen::LowerOptions{});
      source = codegen::print_kir(p, cuda ? codegen::cuda_mapping_notes(p) : codegen::KirNotes{});
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
  cmd->add_flag("--stats", o->stats, "print kernels before -> after fusion, arena vs naive vs max-live per graph");
  cmd->add_option("--target", o->target,
                  "target of select-layout's cost model and of --emit=kir's lowering (cpu; cuda: not with --emit=cpp)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--dump-ir-after", o->dump_ir_after, "print the IR to stderr after this pass ('all': every pass)");
  cmd->callback([&run, o] { run = [o] { return guarded([&] { return run_compile(*o); }); }; });
}

}  // namespace dnnc::cli
