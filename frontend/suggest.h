// "Did you mean ...?" suggestions for misspelled names in diagnostics.
#pragma once
#include <string>
#include <vector>

namespace dnnc::frontend {

/// The candidate closest to `name` by edit distance, if it is close enough to be a likely
/// typo (distance <= 2 and less than half the name's length, or a case-only difference);
/// empty otherwise. Ties go to the earlier candidate.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

/// "; did you mean 'relu'?" or "" when closest_name finds nothing.
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace dnnc::frontend
