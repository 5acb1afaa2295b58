// Co-scheduling of independent GEMMs: consecutive weight-gradient GEMMs (each with its row-wise
// epilogue, e.g. the fused SGD update) share one parallel region, their rows split over the
// threads by work, instead of each GEMM being split over all threads in turn. On 2 cores this
// runs the MLP's three weight-gradient GEMMs 1.3-1.6x faster than splitting each one (OpenBLAS
// scales poorly on a 128-deep product; see docs/codegen.md).
#pragma once
#include <set>

#include "codegen/kir/program.h"

namespace dnnc::codegen {

/// True if step `s` can be a member of a co-scheduled group: a single dense GEMM with a
/// row-wise epilogue (no column sums, no per-row bias), not split along K.
bool coschedulable(const Step& s);

/// Groups co-schedulable GEMM steps: from each such step, the next ones that are independent of
/// it (and of the steps between, which move after the group; at most `max_skip` of them) join
/// its group. Members become consecutive, all but the last with `with_next` set. Returns the
/// number of groups made.
int coschedule_gemms(Program& p, int max_skip = 4);

}  // namespace dnnc::codegen
