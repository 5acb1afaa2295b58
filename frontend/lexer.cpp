// Lexer of the .dnn model language (see docs/dsl.md, "Lexical structure").
#include "frontend/lexer.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace dnnc::frontend {

const char* kind_name(TokenKind k) {
  switch (k) {
    case TokenKind::ident: return "identifier";
    case TokenKind::int_lit: return "integer";
    case TokenKind::float_lit: return "number";
    case TokenKind::string_lit: return "string";
    case TokenKind::lparen: return "'('";
    case TokenKind::rparen: return "')'";
    case TokenKind::lbracket: return "'['";
    case TokenKind::rbracket: return "']'";
    case TokenKind::lbrace: return "'{'";
    case TokenKind::rbrace: return "'}'";
    case TokenKind::comma: return "','";
    case TokenKind::colon: return "':'";
    case TokenKind::equals: return "'='";
    case TokenKind::plus: return "'+'";
    case TokenKind::minus: return "'-'";
    case TokenKind::star: return "'*'";
    case TokenKind::slash: return "'/'";
    case TokenKind::eof: return "end of file";
  }
  return "?";
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::ident: return fmt::format("identifier '{}'", t.text);
    case TokenKind::int_lit: return fmt::format("integer {}", t.text);
    case TokenKind::float_lit: return fmt::format("number {}", t.text);
    case TokenKind::string_lit: return "string literal";
    default: return kind_name(t.kind);
  }
}

namespace {

bool is_ident_start(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(unsigned char c) { return is_ident_start(c) || is_digit(c); }

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& file) : src_(src), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool newline = true;
    for (;;) {
      newline = skip_space_and_comments() || newline;
      Token t;
      t.loc = loc();
      t.newline_before = newline;
      newline = false;
      if (pos_ >= src_.size()) {
        t.kind = TokenKind::eof;
        out.push_back(std::move(t));
        return out;
      }
      lex_token(t);
      out.push_back(std::move(t));
    }
  }

 private:
  const std::string& src_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;

  ir::SourceLoc loc() const { return {line_, col_}; }
  [[noreturn]] void fail(ir::SourceLoc at, const std::string& msg) const { throw ir::CompileError(file_, at, msg); }
  unsigned char peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? static_cast<unsigned char>(src_[pos_ + ahead]) : 0;
  }
  bool at_end(size_t ahead = 0) const { return pos_ + ahead >= src_.size(); }
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  // Rejects control bytes (other than tab, CR, LF) and, outside comments, any non-ASCII byte.
  void check_plain_byte(unsigned char c) const {
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
      fail(loc(), fmt::format("control character 0x{:02X} is not allowed in a .dnn file", c));
    if (c == 0x7F) fail(loc(), "control character 0x7F is not allowed in a .dnn file");
    if (c >= 0x80)
      fail(loc(), fmt::format("non-ASCII byte 0x{:02X} outside a comment; identifiers and operators are ASCII", c));
  }

  // Inside comments: any valid UTF-8 is fine; returns after consuming one code point.
  void consume_comment_char() {
    unsigned char c = peek();
    if (c < 0x80) {
      check_plain_byte(c);
      advance();
      return;
    }
    int extra = 0;
    uint32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      cp = c & 0x07;
    } else
      fail(loc(), fmt::format("invalid UTF-8 byte 0x{:02X}", c));
    for (int i = 1; i <= extra; ++i) {
      unsigned char d = peek(static_cast<size_t>(i));
      if (at_end(static_cast<size_t>(i)) || (d & 0xC0) != 0x80)
        fail(loc(), fmt::format("invalid UTF-8 sequence starting with byte 0x{:02X}", c));
      cp = (cp << 6) | (d & 0x3F);
    }
    bool overlong = (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000);
    if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      fail(loc(), fmt::format("invalid UTF-8 sequence starting with byte 0x{:02X}", c));
    // One column per code point would misalign carets that count bytes; count bytes.
    for (int i = 0; i <= extra; ++i) advance();
  }

  // Returns true if a line break was skipped.
  bool skip_space_and_comments() {
    bool newline = false;
    while (!at_end()) {
      unsigned char c = peek();
      if (c == '\n') {
        newline = true;
        advance();
      } else if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') consume_comment_char();
      } else if (c == '/' && peek(1) == '*') {
        ir::SourceLoc open = loc();
        advance();
        advance();
        for (;;) {
          if (at_end()) fail(open, "unterminated block comment: '/*' has no matching '*/'");
          if (peek() == '*' && peek(1) == '/') {
            advance();
            advance();
            break;
          }
          if (peek() == '\n') newline = true;
          consume_comment_char();
        }
      } else {
        return newline;
      }
    }
    return newline;
  }

  void lex_token(Token& t) {
    unsigned char c = peek();
    size_t start = pos_;
    if (is_ident_start(c)) {
      while (!at_end() && is_ident_char(peek())) advance();
      t.kind = TokenKind::ident;
      t.text = src_.substr(start, pos_ - start);
      return;
    }
    if (is_digit(c)) return lex_number(t);
    if (c == '"') return lex_string(t);
    static const std::pair<char, TokenKind> punct[] = {
        {'(', TokenKind::lparen}, {')', TokenKind::rparen}, {'[', TokenKind::lbracket}, {']', TokenKind::rbracket},
        {'{', TokenKind::lbrace}, {'}', TokenKind::rbrace}, {',', TokenKind::comma},    {':', TokenKind::colon},
        {'=', TokenKind::equals}, {'+', TokenKind::plus},   {'-', TokenKind::minus},    {'*', TokenKind::star},
        {'/', TokenKind::slash},
    };
    for (auto [ch, kind] : punct) {
      if (c == static_cast<unsigned char>(ch)) {
        t.kind = kind;
        t.text = std::string(1, ch);
        advance();
        return;
      }
    }
    check_plain_byte(c);
    fail(loc(), fmt::format("unexpected character '{}'", static_cast<char>(c)));
  }

  void lex_number(Token& t) {
    size_t start = pos_;
    while (is_digit(peek())) advance();
    bool is_float = false;
    if (peek() == '.') {
      is_float = true;
      advance();
      if (!is_digit(peek())) fail(loc(), "expected a digit after '.' in a number");
      while (is_digit(peek())) advance();
    }
    if (peek() == 'e' || peek() == 'E') {
      is_float = true;
      advance();
      if (peek() == '+' || peek() == '-') advance();
      if (!is_digit(peek())) fail(loc(), "expected exponent digits in a number");
      while (is_digit(peek())) advance();
    }
    if (is_ident_start(peek()) || peek() == '.')
      fail(loc(), fmt::format("unexpected character '{}' after a number", static_cast<char>(peek())));
    t.text = src_.substr(start, pos_ - start);
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    if (is_float) {
      t.kind = TokenKind::float_lit;
      auto r = std::from_chars(b, e, t.float_value);
      if (r.ec != std::errc() || r.ptr != e)
        fail(t.loc, fmt::format("number {} is out of range for a 64-bit float", t.text));
      return;
    }
    t.kind = TokenKind::int_lit;
    auto r = std::from_chars(b, e, t.int_value);
    if (r.ec != std::errc() || r.ptr != e)
      fail(t.loc, fmt::format("integer literal {} is too large; the largest integer is {}", t.text,
                              std::numeric_limits<int64_t>::max()));
  }

  void lex_string(Token& t) {
    ir::SourceLoc open = loc();
    advance();
    t.kind = TokenKind::string_lit;
    for (;;) {
      if (at_end() || peek() == '\n') fail(open, "unterminated string literal");
      unsigned char c = peek();
      if (c == '"') {
        advance();
        return;
      }
      if (c == '\\') {
        advance();
        unsigned char e = peek();
        if (e == 'n')
          t.text += '\n';
        else if (e == 't')
          t.text += '\t';
        else if (e == '"' || e == '\\')
          t.text += static_cast<char>(e);
        else if (at_end() || e == '\n')
          fail(open, "unterminated string literal");
        else {
          check_plain_byte(e);
          fail(loc(), fmt::format("unknown escape '\\{}' in a string", static_cast<char>(e)));
        }
        advance();
        continue;
      }
      check_plain_byte(c);
      t.text += static_cast<char>(c);
      advance();
    }
  }
};

}  // namespace

std::vector<Token> lex(const std::string& source, const std::string& file) { return Lexer(source, file).run(); }

}  // namespace dnnc::frontend
