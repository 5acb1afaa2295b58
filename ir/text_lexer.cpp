// The IR text lexer.
#include "ir/text_lexer.h"

#include <fmt/format.h>

namespace dnnc::ir::text {
namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '.'; }

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.loc = loc();
      if (i_ >= s_.size()) {
        out.push_back(t);
        return out;
      }
      char c = s_[i_];
      if (is_alpha(c)) {
        t.kind = Tok::ident;
        t.text = take_while(is_name_char);
      } else if (is_digit(c) || ((c == '-' || c == '+') && i_ + 1 < s_.size() && is_digit(s_[i_ + 1]))) {
        lex_number(t);
      } else if (c == '-' && s_.compare(i_, 4, "-inf") == 0) {
        advance(4);
        t.kind = Tok::floating;
        t.text = "-inf";
      } else if (c == '"') {
        t.kind = Tok::string;
        t.text = lex_string();
      } else if (c == '%' || c == '@') {
        advance(1);
        t.kind = c == '%' ? Tok::value : Tok::param;
        if (i_ < s_.size() && s_[i_] == '"') {
          t.text = lex_string();
        } else {
          t.text = take_while(is_name_char);
          if (t.text.empty())
            throw CompileError(file_, t.loc, fmt::format("expected a name after '{}', found {}", c, here()));
        }
      } else if (std::string("{}()[],:=").find(c) != std::string::npos) {
        t.kind = Tok::punct;
        t.text = std::string(1, c);
        advance(1);
      } else {
        throw CompileError(file_, t.loc, fmt::format("expected a token, found {}", here()));
      }
      out.push_back(std::move(t));
    }
  }

 private:
  SourceLoc loc() const { return SourceLoc{line_, col_}; }
  std::string here() const {
    if (i_ >= s_.size()) return "end of input";
    return fmt::format("'{}'", s_[i_]);
  }
  void advance(size_t n) {
    for (size_t k = 0; k < n && i_ < s_.size(); ++k, ++i_) {
      if (s_[i_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }
  void skip_space() {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance(1);
      } else if (c == '/' && i_ + 1 < s_.size() && s_[i_ + 1] == '/') {
        while (i_ < s_.size() && s_[i_] != '\n') advance(1);
      } else {
        return;
      }
    }
  }
  template <class Pred>
  std::string take_while(Pred p) {
    size_t start = i_;
    while (i_ < s_.size() && p(s_[i_])) advance(1);
    return s_.substr(start, i_ - start);
  }
  // [+-]digits[.digits][(e|E)[+-]digits]; a '.' or exponent makes it a float.
  void lex_number(Token& t) {
    size_t start = i_;
    t.kind = Tok::integer;
    if (s_[i_] == '-' || s_[i_] == '+') advance(1);
    take_while(is_digit);
    if (i_ < s_.size() && s_[i_] == '.') {
      t.kind = Tok::floating;
      advance(1);
      take_while(is_digit);
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      t.kind = Tok::floating;
      advance(1);
      if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) advance(1);
      if (take_while(is_digit).empty())
        throw CompileError(file_, loc(), fmt::format("expected digits in the exponent, found {}", here()));
    }
    t.text = s_.substr(start, i_ - start);
  }
  // A "..." string with \" and \\ escapes; returns the decoded contents.
  std::string lex_string() {
    SourceLoc start = loc();
    advance(1);
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) advance(1);
      out += s_[i_];
      advance(1);
    }
    if (i_ >= s_.size()) throw CompileError(file_, start, "unterminated string; expected '\"', found end of input");
    advance(1);
    return out;
  }

  const std::string& s_;
  const std::string& file_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

std::vector<Token> lex(const std::string& text, const std::string& filename) { return Lexer(text, filename).run(); }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::ident:
      return fmt::format("identifier '{}'", t.text);
    case Tok::integer:
    case Tok::floating:
      return fmt::format("number {}", t.text);
    case Tok::string:
      return fmt::format("string \"{}\"", t.text);
    case Tok::value:
      return fmt::format("value %{}", t.text);
    case Tok::param:
      return fmt::format("param @{}", t.text);
    case Tok::punct:
      return fmt::format("'{}'", t.text);
    case Tok::end:
      return "end of input";
  }
  return "?";
}

}  // namespace dnnc::ir::text
