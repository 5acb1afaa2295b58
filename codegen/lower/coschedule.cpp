// See coschedule.h.
#include "codegen/lower/coschedule.h"

#include <vector>

namespace dnnc::codegen {

bool coschedulable(const Step& s) {
  if (s.kind != Step::Kind::gemm) return false;
  const GemmCall& g = s.gemm;
  return g.epilogue >= 0 && g.batch == 1 && g.ldc == g.n && g.col_sums < 0 && g.bias_kind != GemmCall::Bias::per_row &&
         (g.threads == GemmCall::Threads::split || g.threads == GemmCall::Threads::single);
}

int coschedule_gemms(Program& p, int max_skip) {
  int groups = 0;
  std::vector<Step>& steps = p.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!coschedulable(steps[i]) || steps[i].with_next) continue;
    std::vector<size_t> members{i}, skipped;
    std::vector<StepAccess> member_acc{step_access(p, steps[i])}, skipped_acc;
    for (size_t j = i + 1; j < steps.size() && skipped.size() <= static_cast<size_t>(max_skip); ++j) {
      StepAccess acc = step_access(p, steps[j]);
      bool joins = coschedulable(steps[j]);
      // A member runs before the skipped steps it passes, so it must not touch what they touch.
      for (const StepAccess& o : member_acc) joins = joins && independent(acc, o);
      for (const StepAccess& o : skipped_acc) joins = joins && independent(acc, o);
      if (joins) {
        members.push_back(j);
        member_acc.push_back(std::move(acc));
      } else {
        skipped.push_back(j);
        skipped_acc.push_back(std::move(acc));
      }
    }
    if (members.size() < 2) continue;
    // New order from i: the members, then the skipped steps up to the last member (in order).
    std::vector<Step> reordered;
    size_t last = members.back();
    for (size_t m : members) reordered.push_back(std::move(steps[m]));
    for (size_t k : skipped)
      if (k < last) reordered.push_back(std::move(steps[k]));
    for (size_t m = 0; m + 1 < members.size(); ++m) reordered[m].with_next = true;
    for (size_t k = 0; k < reordered.size(); ++k) steps[i + k] = std::move(reordered[k]);
    i += members.size() - 1;
    ++groups;
  }
  return groups;
}

}  // namespace dnnc::codegen
