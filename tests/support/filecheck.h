// A small FileCheck (as in LLVM's lit tests): `// CHECK: text` lines must appear in the output in
// order, `// CHECK-NEXT: text` on the line right after the previous match, `// CHECK-NOT: text`
// nowhere between the previous match and the next one. Matching is by substring.
#pragma once
#include <sstream>
#include <string>
#include <vector>

namespace dnnc::test {

struct CheckFile {
  std::string input;                                        // the file with every `//` line blanked (line numbers kept)
  std::vector<std::string> passes;                          // from `// RUN: passes=a,b`
  std::string target = "cpu";                               // from `// RUN: passes=a,b target=cuda`
  std::vector<std::pair<std::string, std::string>> checks;  // (kind, text)
};

inline CheckFile parse_check_file(const std::string& text) {
  CheckFile f;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t p = line.find_first_not_of(" \t");
    if (p != std::string::npos && line.compare(p, 2, "//") == 0) {
      std::string body = line.substr(p + 2);
      body.erase(0, body.find_first_not_of(' '));
      for (const char* kind : {"CHECK-NEXT:", "CHECK-NOT:", "CHECK:"}) {
        if (body.rfind(kind, 0) == 0) {
          std::string t = body.substr(std::string(kind).size());
          t.erase(0, t.find_first_not_of(' '));
          f.checks.push_back({std::string(kind, std::string(kind).size() - 1), t});
          break;
        }
      }
      if (body.rfind("RUN: passes=", 0) == 0) {
        std::string list = body.substr(12);
        if (size_t t = list.find(" target="); t != std::string::npos) {
          f.target = list.substr(t + 8);
          list.erase(t);
        }
        std::istringstream ps(list);
        std::string pass;
        while (std::getline(ps, pass, ',')) f.passes.push_back(pass);
      }
      f.input += "\n";
      continue;
    }
    f.input += line + "\n";
  }
  return f;
}

/// Returns "" if every check holds, else a message naming the first failing check.
inline std::string filecheck(const std::string& output,
                             const std::vector<std::pair<std::string, std::string>>& checks) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  size_t pos = 0;  // next line to search from
  std::vector<std::string> pending_not;
  for (const auto& [kind, text] : checks) {
    if (kind == "CHECK-NOT") {
      pending_not.push_back(text);
      continue;
    }
    size_t found = lines.size();
    if (kind == "CHECK-NEXT") {
      if (pos < lines.size() && lines[pos].find(text) != std::string::npos) found = pos;
    } else {
      for (size_t i = pos; i < lines.size(); ++i)
        if (lines[i].find(text) != std::string::npos) {
          found = i;
          break;
        }
    }
    if (found == lines.size()) return kind + ": '" + text + "' not found after line " + std::to_string(pos);
    for (const auto& n : pending_not)
      for (size_t i = pos; i < found; ++i)
        if (lines[i].find(n) != std::string::npos)
          return "CHECK-NOT: '" + n + "' found at line " + std::to_string(i + 1);
    pending_not.clear();
    pos = found + 1;
  }
  for (const auto& n : pending_not)
    for (size_t i = pos; i < lines.size(); ++i)
      if (lines[i].find(n) != std::string::npos) return "CHECK-NOT: '" + n + "' found at line " + std::to_string(i + 1);
  return {};
}

}  // namespace dnnc::test
