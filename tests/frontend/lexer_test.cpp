// Lexer unit tests: token kinds, values, locations, comments, and hostile bytes.
#include "frontend/lexer.h"

#include <catch2/catch.hpp>

using namespace dnnc;
using frontend::lex;
using frontend::TokenKind;

static std::string error_of(const std::string& src) {
  try {
    lex(src, "t.dnn");
  } catch (const ir::CompileError& e) {
    return std::to_string(e.loc().line) + ":" + std::to_string(e.loc().col) + " " + e.message();
  }
  return "no error";
}

TEST_CASE("lexer: identifiers, punctuation and numbers carry their kind, value and line:col", "[frontend][lexer]") {
  auto t = lex("fc1 = linear(784, 0.5e1)\n  x: [N]", "t.dnn");
  std::vector<TokenKind> kinds;
  for (const auto& tok : t) kinds.push_back(tok.kind);
  CHECK(kinds == std::vector<TokenKind>{TokenKind::ident, TokenKind::equals, TokenKind::ident, TokenKind::lparen,
                                        TokenKind::int_lit, TokenKind::comma, TokenKind::float_lit, TokenKind::rparen,
                                        TokenKind::ident, TokenKind::colon, TokenKind::lbracket, TokenKind::ident,
                                        TokenKind::rbracket, TokenKind::eof});
  CHECK(t[0].text == "fc1");
  CHECK(t[4].int_value == 784);
  CHECK(t[6].float_value == 5.0);
  CHECK(t[8].loc == ir::SourceLoc{2, 3});
  CHECK(t[8].newline_before);
  CHECK_FALSE(t[9].newline_before);
  CHECK(t[13].loc == ir::SourceLoc{2, 9});
}

TEST_CASE("lexer: line and block comments are skipped and count line breaks", "[frontend][lexer]") {
  auto t = lex("a # comment é\n/* two\nlines */ b /* x */ c", "t.dnn");
  REQUIRE(t.size() == 4);
  CHECK(t[1].text == "b");
  CHECK(t[1].loc == ir::SourceLoc{3, 10});
  CHECK(t[1].newline_before);
  CHECK(t[2].text == "c");
  CHECK_FALSE(t[2].newline_before);
}

TEST_CASE("lexer: the largest int64 literal is accepted, one more overflows", "[frontend][lexer]") {
  CHECK(lex("9223372036854775807", "t.dnn")[0].int_value == INT64_MAX);
  CHECK(error_of("x = 9223372036854775808") ==
        "1:5 integer literal 9223372036854775808 is too large; the largest integer is 9223372036854775807");
}

TEST_CASE("lexer: float literals out of double range are errors", "[frontend][lexer]") {
  CHECK(error_of("  1e999") == "1:3 number 1e999 is out of range for a 64-bit float");
}

TEST_CASE("lexer: malformed numbers are errors at the offending character", "[frontend][lexer]") {
  CHECK(error_of("3.x") == "1:3 expected a digit after '.' in a number");
  CHECK(error_of("1e+") == "1:4 expected exponent digits in a number");
  CHECK(error_of("12ab") == "1:3 unexpected character 'a' after a number");
}

TEST_CASE("lexer: unterminated block comments and strings point at their opening", "[frontend][lexer]") {
  CHECK(error_of("a\n  /* never closed\n\n") == "2:3 unterminated block comment: '/*' has no matching '*/'");
  CHECK(error_of("x = \"abc\ny") == "1:5 unterminated string literal");
}

TEST_CASE("lexer: control bytes and non-ASCII outside comments are errors at their byte", "[frontend][lexer]") {
  CHECK(error_of(std::string("ab\x01", 3)) == "1:3 control character 0x01 is not allowed in a .dnn file");
  CHECK(error_of(std::string("a\0b", 3)) == "1:2 control character 0x00 is not allowed in a .dnn file");
  CHECK(error_of("x = \xC3\xA9") == "1:5 non-ASCII byte 0xC3 outside a comment; identifiers and operators are ASCII");
}

TEST_CASE("lexer: invalid UTF-8 inside comments is an error, valid UTF-8 is not", "[frontend][lexer]") {
  CHECK(error_of("# caf\xC3\xA9 \xE2\x82\xAC") == "no error");
  CHECK(error_of("# bad \xFF") == "1:7 invalid UTF-8 byte 0xFF");
  CHECK(error_of("# cut \xE2\x82") == "1:7 invalid UTF-8 sequence starting with byte 0xE2");
  CHECK(error_of("/* overlong \xC0\x80 */") == "1:13 invalid UTF-8 byte 0xC0");
}

TEST_CASE("lexer: characters that start no token are errors", "[frontend][lexer]") {
  CHECK(error_of("a @ b") == "1:3 unexpected character '@'");
  CHECK(error_of("a.b") == "1:2 unexpected character '.'");
}

TEST_CASE("lexer: CRLF line endings count as one line break", "[frontend][lexer]") {
  auto t = lex("a\r\nb", "t.dnn");
  CHECK(t[1].loc == ir::SourceLoc{2, 1});
}
