// Lexer of the .dnn model language: turns source text into tokens with 1-based line/col.
// Rejects what cannot be part of a model (control bytes, stray non-ASCII, bad literals).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/diagnostic.h"

namespace dnnc::frontend {

enum class TokenKind : uint8_t {
  ident,       // [A-Za-z_][A-Za-z0-9_]*  (keywords are identifiers the parser recognises)
  int_lit,     // 123
  float_lit,   // 0.5, 1e-8, 2.5E+3
  string_lit,  // "text" (no use in the grammar yet; lexed so it can be rejected clearly)
  lparen,
  rparen,
  lbracket,
  rbracket,
  lbrace,
  rbrace,
  comma,
  colon,
  equals,
  plus,
  minus,
  star,
  slash,
  eof,
};

struct Token {
  TokenKind kind = TokenKind::eof;
  std::string text;  // identifier name, literal spelling, string contents (unescaped)
  int64_t int_value = 0;
  double float_value = 0.0;
  ir::SourceLoc loc;
  bool newline_before = false;  // a line break separates this token from the previous one
};

/// "identifier 'fc'", "integer 3", "'('", "end of file": how diagnostics name a token.
std::string describe(const Token& t);
/// "identifier", "'('", ...: how diagnostics name an expected token kind.
const char* kind_name(TokenKind k);

/// Tokenises `source`. The last token is always `eof`.
/// Throws ir::CompileError(file, loc, ...) at the offending byte for: control bytes, non-ASCII
/// bytes outside comments, invalid UTF-8 inside comments, unterminated strings or block
/// comments (pointing at the opening), integer literals above 2^63-1, float literals that
/// overflow, and characters that start no token.
std::vector<Token> lex(const std::string& source, const std::string& file);

}  // namespace dnnc::frontend
