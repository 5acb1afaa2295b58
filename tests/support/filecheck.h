// A small FileCheck (as in LLVM's lit tests), for tests written against printed IR: in a check
// file, comment lines (`//` or `#`) carry
//   CHECK: text       text appears after the previous match (the rest of its line included)
//   CHECK-NEXT: text  text appears on the line right after the previous match
//   CHECK-SAME: text  text appears on the previous match's line, after it
//   CHECK-NOT: text   text appears nowhere between the previous match and the next one
//   RUN: key=value ...  how to produce the output (passes=a,b target=cuda graph=infer batch=4)
// Matching is by substring.
#pragma once
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace dnnc::test {

struct CheckFile {
  std::string input;                       // the file with every comment line blanked (line numbers kept)
  std::map<std::string, std::string> run;  // from `RUN: key=value ...`
  std::vector<std::string> passes;         // run["passes"], split at commas
  std::string target = "cpu";              // run["target"], default cpu
  std::vector<std::pair<std::string, std::string>> checks;  // (kind, text)
};

inline CheckFile parse_check_file(const std::string& text) {
  CheckFile f;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t p = line.find_first_not_of(" \t");
    const bool slashes = p != std::string::npos && line.compare(p, 2, "//") == 0;
    const bool hash = p != std::string::npos && line[p] == '#';
    if (!slashes && !hash) {
      f.input += line + "\n";
      continue;
    }
    std::string body = line.substr(p + (slashes ? 2 : 1));
    body.erase(0, body.find_first_not_of(' '));
    for (const char* kind : {"CHECK-NEXT:", "CHECK-SAME:", "CHECK-NOT:", "CHECK:"}) {
      if (body.rfind(kind, 0) == 0) {
        std::string t = body.substr(std::string(kind).size());
        t.erase(0, t.find_first_not_of(' '));
        f.checks.push_back({std::string(kind, std::string(kind).size() - 1), t});
        break;
      }
    }
    if (body.rfind("RUN:", 0) == 0) {
      std::istringstream words(body.substr(4));
      for (std::string w; words >> w;)
        if (size_t eq = w.find('='); eq != std::string::npos) f.run[w.substr(0, eq)] = w.substr(eq + 1);
    }
    f.input += "\n";
  }
  if (auto it = f.run.find("passes"); it != f.run.end()) {
    std::istringstream ps(it->second);
    for (std::string pass; std::getline(ps, pass, ',');) f.passes.push_back(pass);
  }
  if (auto it = f.run.find("target"); it != f.run.end()) f.target = it->second;
  return f;
}

/// Returns "" if every check holds, else a message naming the first failing check.
inline std::string filecheck(const std::string& output,
                             const std::vector<std::pair<std::string, std::string>>& checks) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t line = 0, col = 0;  // where the next match may start
  bool matched = false;      // some check has matched (CHECK-NEXT/SAME need one)
  std::vector<std::string> pending_not;
  // True if `text` occurs in [from line/col, to line/col).
  auto occurs = [&](const std::string& text, size_t l0, size_t c0, size_t l1, size_t c1) -> long {
    for (size_t i = l0; i < lines.size() && i <= l1; ++i) {
      const size_t start = i == l0 ? c0 : 0;
      size_t at = lines[i].find(text, start);
      if (at == std::string::npos) continue;
      if (i == l1 && at + text.size() > c1) continue;
      return static_cast<long>(i);
    }
    return -1;
  };
  for (const auto& [kind, text] : checks) {
    if (kind == "CHECK-NOT") {
      pending_not.push_back(text);
      continue;
    }
    size_t found_line = lines.size(), found_col = 0;
    if (kind == "CHECK-NEXT") {
      const size_t next = matched ? line + 1 : 0;
      if (next < lines.size()) {
        size_t at = lines[next].find(text);
        if (at != std::string::npos) found_line = next, found_col = at;
      }
    } else if (kind == "CHECK-SAME") {
      if (matched && line < lines.size()) {
        size_t at = lines[line].find(text, col);
        if (at != std::string::npos) found_line = line, found_col = at;
      }
    } else {
      for (size_t i = line; i < lines.size(); ++i) {
        size_t at = lines[i].find(text, i == line ? col : 0);
        if (at != std::string::npos) {
          found_line = i, found_col = at;
          break;
        }
      }
    }
    if (found_line == lines.size())
      return kind + ": '" + text + "' not found after line " + std::to_string(line + 1) +
             (line < lines.size() ? " (`" + lines[line] + "`)" : "");
    for (const auto& n : pending_not)
      if (long at = occurs(n, line, col, found_line, found_col); at >= 0)
        return "CHECK-NOT: '" + n + "' found at line " + std::to_string(at + 1);
    pending_not.clear();
    line = found_line;
    col = found_col + text.size();
    matched = true;
  }
  for (const auto& n : pending_not)
    if (long at = occurs(n, line, col, lines.size(), 0); at >= 0)
      return "CHECK-NOT: '" + n + "' found at line " + std::to_string(at + 1);
  return {};
}

}  // namespace dnnc::test
