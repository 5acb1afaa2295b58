// Shared test helper: whole-file reads.
#pragma once
#include <fstream>
#include <sstream>
#include <string>

namespace dnnc::test {

/// The bytes of the file at `path`; empty if it cannot be read (check existence separately
/// where that matters).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace dnnc::test
