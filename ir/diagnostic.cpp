// Compiler-style diagnostics: location line, source line, caret.
#include "ir/diagnostic.h"

#include <fmt/format.h>

namespace dnnc::ir {

CompileError::CompileError(std::string file, SourceLoc loc, std::string message)
    : std::runtime_error(loc.known() ? fmt::format("{}:{}:{}: error: {}", file, loc.line, loc.col, message)
                                     : fmt::format("{}: error: {}", file, message)),
      file_(std::move(file)),
      loc_(loc),
      message_(std::move(message)) {}

static std::string source_line(const std::string& source, int line) {
  size_t pos = 0;
  for (int l = 1; l < line; ++l) {
    pos = source.find('\n', pos);
    if (pos == std::string::npos) return {};
    ++pos;
  }
  size_t end = source.find('\n', pos);
  std::string s = source.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

std::string format_diagnostic(const std::string& file, SourceLoc loc, const std::string& message,
                              const std::string& source, const char* severity) {
  if (!loc.known()) return fmt::format("{}: {}: {}\n", file, severity, message);
  std::string out = fmt::format("{}:{}:{}: {}: {}\n", file, loc.line, loc.col, severity, message);
  std::string text = source_line(source, loc.line);
  if (text.empty() && source.empty()) return out;
  out += text + "\n";
  std::string caret;
  for (int i = 1; i < loc.col && static_cast<size_t>(i - 1) < text.size(); ++i)
    caret += text[static_cast<size_t>(i - 1)] == '\t' ? '\t' : ' ';
  return out + caret + "^\n";
}

std::string format_diagnostic(const CompileError& e, const std::string& source) {
  return format_diagnostic(e.file(), e.loc(), e.message(), source);
}

}  // namespace dnnc::ir
