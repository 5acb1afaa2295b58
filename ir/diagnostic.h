// Source locations and user-facing compile errors, printed like a compiler's:
// `file:line:col: error: message`, the source line, and a caret under the column.
#pragma once
#include <stdexcept>
#include <string>

namespace dnnc::ir {

struct SourceLoc {
  int line = 0;  // 1-based; 0 = unknown
  int col = 0;   // 1-based
  bool known() const { return line > 0; }
  friend bool operator==(const SourceLoc&, const SourceLoc&) = default;
};

/// A user error (bad syntax, unknown op, shape mismatch, ...) at a location in a named file.
/// Thrown by the frontend, the IR parser and shape inference; caught by the CLI.
class CompileError : public std::runtime_error {
 public:
  CompileError(std::string file, SourceLoc loc, std::string message);
  const std::string& file() const { return file_; }
  SourceLoc loc() const { return loc_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  SourceLoc loc_;
  std::string message_;
};

/// Formats `file:line:col: error: message\n<source line>\n<spaces>^\n`. `source` is the
/// whole text of the file (may be empty: then only the first line is printed). Tabs in
/// the source line are kept so the caret lines up.
std::string format_diagnostic(const std::string& file, SourceLoc loc, const std::string& message,
                              const std::string& source, const char* severity = "error");
std::string format_diagnostic(const CompileError& e, const std::string& source);

}  // namespace dnnc::ir
