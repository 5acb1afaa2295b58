// Edit-distance based name suggestions.
#include "frontend/suggest.h"

#include <algorithm>
#include <cctype>

namespace dnnc::frontend {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent characters ("sdg" -> "sgd") each cost 1.
static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

static std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  // Long hostile identifiers must not make this quadratic in a harmful way.
  if (name.size() > 64) return {};
  std::string best;
  size_t best_d = 0;
  for (const auto& c : candidates) {
    if (c == name || c.size() > 64) continue;
    size_t d = lower(c) == lower(name) ? 0 : edit_distance(name, c);
    bool close = d == 0 || (d <= 2 && 2 * d < std::max(name.size(), c.size()));
    if (!close) continue;
    if (best.empty() || d < best_d) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  std::string c = closest_name(name, candidates);
  return c.empty() ? std::string() : "; did you mean '" + c + "'?";
}

}  // namespace dnnc::frontend
