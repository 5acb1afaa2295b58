// Tokens of the IR text form (docs/ir.md): identifiers, numbers, strings, %values, @params,
// punctuation; `//` comments and whitespace (newlines included) are skipped.
#pragma once
#include <string>
#include <vector>

#include "ir/diagnostic.h"

namespace dnnc::ir::text {

enum class Tok { ident, integer, floating, string, value, param, punct, end };

struct Token {
  Tok kind = Tok::end;
  std::string text;  // identifier / number spelling; decoded string; value or param name; punct char
  SourceLoc loc;
};

/// Splits IR text into tokens ending with one Tok::end. Throws CompileError (file, line:col) on a
/// character that starts no token, an unterminated string, or a `%`/`@` not followed by a name.
std::vector<Token> lex(const std::string& text, const std::string& filename);

/// A short description for "expected X, found Y" messages: "'{'", "identifier 'foo'", "end of input".
std::string describe(const Token& t);

}  // namespace dnnc::ir::text
