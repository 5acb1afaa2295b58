// Compilation statistics: kernel launches before and after fusion, arena vs naive vs max-live.
#pragma once
#include <string>

#include "ir/graph.h"

namespace dnnc::passes {

/// Kernel launches if every non-view node were its own kernel (what fusion starts from).
int unfused_kernel_count(const ir::Graph& g);

/// One line per graph: `train_step: kernels 27 -> 10; arena 1.2 MiB (naive 3.4 MiB = 35%,
/// max-live 1.1 MiB = 1.05x) at batch 128`. Memory figures only where a plan exists.
std::string format_stats(const ir::Module& m);

}  // namespace dnnc::passes
