// Shared test helpers: running the dnnc binary and reading the arena figures of `--stats`.
#pragma once
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace dnnc::test {

/// stdout and stderr of `exe args`; fails the test if it exits non-zero.
inline std::string run_dnnc_ok(const std::string& exe, const std::string& args) {
  std::string cmd = exe + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  INFO(cmd << "\n" << out);
  REQUIRE(pclose(f) == 0);
  return out;
}

/// The arena bytes per graph in `dnnc compile --stats` output, from the plan-memory lines of
/// `target` (cpu | cuda).
inline std::map<std::string, int64_t> stats_arenas(const std::string& out, const std::string& target) {
  std::map<std::string, int64_t> arenas;
  std::regex graph(R"(^(\w+): kernels )"), arena("^  plan-memory \\(" + target + "\\): arena (\\d+) bytes");
  std::string current;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, graph)) current = m[1];
    if (std::regex_search(line, m, arena)) arenas[current] = std::stoll(m[1]);
  }
  return arenas;
}

}  // namespace dnnc::test
