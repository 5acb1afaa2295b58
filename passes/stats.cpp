// Compilation statistics for `dnnc compile --stats` and `dnnc dump-ir --stats`.
#include "passes/stats.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "passes/graph_analysis.h"

namespace dnnc::passes {

int unfused_kernel_count(const ir::Graph& g) {
  int n = 0;
  for (const auto& node : g.nodes) n += (node.op == "flatten" || node.op == "reshape") ? 0 : 1;
  return n;
}

std::string format_groups(const ir::Graph& g) {
  // Kinds in order of first appearance, with how many groups and nodes each has.
  std::vector<std::string> kinds;
  std::map<std::string, std::pair<int, int>> count;  // kind -> (groups, nodes)
  for (const ir::FusionGroup& grp : g.groups) {
    if (!count.count(grp.kind)) kinds.push_back(grp.kind);
    ++count[grp.kind].first;
  }
  for (const ir::Node& n : g.nodes)
    if (n.group >= 0) ++count[g.groups.at(static_cast<size_t>(n.group)).kind].second;
  std::string out;
  for (const std::string& k : kinds)
    out += fmt::format("{}{} x{} ({} nodes)", out.empty() ? "" : ", ", k, count[k].first, count[k].second);
  return out;
}

std::string format_stats(const ir::Module& m, const LayoutReport* layout,
                         const std::function<std::string(const ir::Graph&)>& more) {
  std::string out;
  for (const auto& g : m.graphs) {
    out += fmt::format("{}: kernels {} -> {}\n", g.name, unfused_kernel_count(g), kernel_count(g));
    if (!g.groups.empty()) out += "  fuse: " + format_groups(g) + "\n";
    if (layout)
      for (const GraphLayoutReport& r : layout->graphs) {
        if (r.graph != g.name) continue;
        out += fmt::format(
            "  select-layout ({}): transposes {} -> {} ({} into GEMM flags, {} cancelled); {} of {} activation "
            "regions nhwc, {} conversions; modelled {:.1f} us (all NCHW: {:.1f} us)\n",
            layout->target, r.transposes_before, r.transposes_after, r.folded_into_gemm, r.cancelled, r.nhwc_regions,
            r.regions, r.conversions, r.cost_us, r.row_major_cost_us);
      }
    if (more) out += more(g);
  }
  return out;
}

}  // namespace dnnc::passes
