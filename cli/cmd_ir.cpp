// `dnnc check` and `dnnc dump-ir`: parse, verify, run passes and print the IR.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <memory>

#include "cli/cmd_setup.h"
#include "cli/commands.h"
#include "ir/dot.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/stats.h"

namespace dnnc::cli {
namespace {

std::vector<std::string> split_csv(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    size_t start = 0;
    while (start <= item.size()) {
      size_t end = item.find(',', start);
      if (end == std::string::npos) end = item.size();
      if (end > start) out.push_back(item.substr(start, end - start));
      start = end + 1;
    }
  }
  return out;
}

struct DumpOptions {
  std::string file;
  std::string after;
  std::vector<std::string> passes, disabled;
  std::string format = "text";
  std::string graph;
  std::string target = "cpu";
  std::string layout = "auto";
  bool verify_each = false;
  bool stats = false;
};

passes::CompileOptions compile_options(const DumpOptions& o, passes::LayoutReport* layout,
                                       const passes::PipelineOptions& p) {
  return {.target = &passes::find_target(o.target), .layout_report = layout,
          .layout = passes::parse_layout_choice(o.layout), .pipeline = p};
}

std::string graph_names(const ir::Module& m) {
  std::vector<std::string> names;
  for (const ir::Graph& g : m.graphs) names.push_back(g.name);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

// Where --graph NAME comes from: compiles the model anew with the user's pipeline and returns
// the pass after which NAME first exists ("frontend" if the frontend makes it). Throws
// std::invalid_argument if no stage makes it, naming the graphs there are.
std::string stage_making_graph(const DumpOptions& o, const passes::PipelineOptions& pipeline) {
  ir::Module m = load_module(o.file);
  if (m.graph(o.graph)) return "frontend";
  passes::PipelineOptions p = pipeline;
  p.stop_after.clear();
  std::string maker;
  p.after_pass = [&](const std::string& pass, const ir::Module& mod, bool) {
    if (maker.empty() && mod.graph(o.graph)) maker = pass;
  };
  passes::LayoutReport layout;
  passes::compile(m, compile_options(o, &layout, p));
  if (maker.empty())
    throw std::invalid_argument(
        fmt::format("--graph {}: no graph of that name; after all passes the graphs are {}", o.graph, graph_names(m)));
  return maker;
}

// `stage`: "frontend" or the pass after which `m` is printed.
std::string render(const ir::Module& m, const DumpOptions& o, const std::string& stage, const std::string& maker) {
  const ir::Graph* g = o.graph.empty() ? nullptr : m.graph(o.graph);
  if (!o.graph.empty() && !g) {
    std::string where = stage == "frontend" ? "after the frontend" : "after pass " + stage;
    std::string msg = fmt::format("--graph {}: no graph of that name {} (there: {}); pass {} makes it", o.graph,
                                  where, graph_names(m), maker);
    if (o.after == "all") return "// " + msg + "\n";
    throw std::invalid_argument(msg + fmt::format(": add --after {} (or a later pass, or --after all)", maker));
  }
  if (o.format == "text") return g ? ir::print(*g, m) : ir::print(m);
  if (g) return ir::to_dot(*g, m);
  std::string out;
  for (const auto& graph : m.graphs) out += ir::to_dot(graph, m);
  return out;
}

int run_dump(const DumpOptions& o) {
  ir::Module m = load_module(o.file);
  ir::verify(m);
  passes::LayoutReport layout;
  passes::PipelineOptions p;
  p.passes = split_csv(o.passes);
  auto disabled = split_csv(o.disabled);
  p.disabled = {disabled.begin(), disabled.end()};
  p.verify_each = o.verify_each;
  // The stage that makes --graph (an unknown name is an error before anything is printed).
  std::string maker = o.graph.empty() ? "" : stage_making_graph(o, p);
  if (o.after.empty()) {  // the module exactly as the frontend produced it
    std::cout << render(m, o, "frontend", maker);
    return 0;
  }
  if (o.after == "all") {
    std::cout << "// ----- IR after frontend -----\n" << render(m, o, "frontend", maker);
    p.after_pass = [&](const std::string& pass, const ir::Module& mod, bool changed) {
      std::cout << fmt::format("// ----- IR after {}{} -----\n", pass, changed ? "" : " (unchanged)")
                << render(mod, o, pass, maker);
    };
    passes::compile(m, compile_options(o, &layout, p));
    return 0;
  }
  p.stop_after = o.after;
  passes::compile(m, compile_options(o, &layout, p));
  if (o.stats) {
    std::cout << passes::format_stats(m, layout.target.empty() ? nullptr : &layout);
    return 0;
  }
  std::cout << render(m, o, o.after, maker);
  return 0;
}

}  // namespace

void add_check_command(CLI::App& app, Runner& run) {
  auto file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("check", "Parse and verify a model; exit 0 if it is valid, 1 if not");
  cmd->add_option("file", *file, "model file (.dnn, or .ir text)")->required();
  cmd->callback([&run, file] {
    run = [file] {
      return guarded([&] {
        ir::Module m = load_module(*file);
        ir::verify(m);
        std::cout << fmt::format("{}: ok: model {}, {}\n", *file, m.name, describe_parameters(m));
        return 0;
      });
    };
  });
}

void add_dump_ir_command(CLI::App& app, Runner& run) {
  auto o = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand("dump-ir", "Print the IR of a model, after the frontend or after a pass");
  cmd->add_option("file", o->file, "model file (.dnn, or .ir text)")->required();
  cmd->add_option("--after,--dump-ir-after", o->after,
                  "print after this pass ('all': after every pass); default: frontend output");
  cmd->add_option("--passes", o->passes, "comma-separated pipeline to run instead of the default");
  cmd->add_option("--disable-pass", o->disabled, "skip these passes (comma-separated, repeatable)");
  cmd->add_option("--format", o->format, "text or dot")->check(CLI::IsMember({"text", "dot"}));
  cmd->add_option("--graph", o->graph, "print only this graph (forward, train_step, infer)");
  cmd->add_option("--target", o->target, "target whose cost model select-layout uses")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--layout", o->layout, "activation layout: auto (the target's cost model), nchw or nhwc (forced)")
      ->check(CLI::IsMember({"auto", "nchw", "nhwc"}));
  cmd->add_flag("--verify-each", o->verify_each, "run the verifier after every pass");
  cmd->add_flag("--stats", o->stats, "print kernel counts, fusion groups and layout choices instead of the IR (the arena: compile --stats)");
  cmd->callback([&run, o] { run = [o] { return guarded([&] { return run_dump(*o); }); }; });
}

}  // namespace dnnc::cli
