// Recursive-descent parser of .dnn files. Each function carries its grammar rule.
#include "frontend/parser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/lexer.h"

namespace dnnc::frontend {
namespace {

using ast::Expr;
using ast::ExprKind;
using ast::ExprPtr;

bool is_keyword(const std::string& s) {
  return s == "model" || s == "train" || s == "input" || s == "true" || s == "false";
}

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& file) : toks_(std::move(toks)), file_(file) {}

  /// file ::= model_block [train_block] EOF
  ast::File parse_file() {
    ast::File f;
    if (!is_ident("model")) fail_expected("'model'");
    f.model = parse_model();
    if (is_ident("train")) f.train = parse_train();
    if (cur().kind != TokenKind::eof) {
      if (is_ident("model")) fail(cur().loc, "a file holds one model block; found a second 'model'");
      fail_expected(f.train ? "end of file" : "'train' or end of file");
    }
    return f;
  }

 private:
  std::vector<Token> toks_;
  const std::string& file_;
  size_t pos_ = 0;
  int depth_ = 0;

  const Token& cur() const { return toks_[pos_]; }
  const Token& next() const { return toks_[pos_ + 1 < toks_.size() ? pos_ + 1 : pos_]; }
  bool is(TokenKind k) const { return cur().kind == k; }
  bool is_ident(const char* word) const { return is(TokenKind::ident) && cur().text == word; }
  const Token& take() {
    const Token& t = toks_[pos_];
    if (t.kind != TokenKind::eof) ++pos_;
    return t;
  }
  [[noreturn]] void fail(ir::SourceLoc at, const std::string& msg) const { throw ir::CompileError(file_, at, msg); }
  [[noreturn]] void fail_expected(const std::string& what) const {
    fail(cur().loc, fmt::format("expected {}, found {}", what, describe(cur())));
  }
  const Token& expect(TokenKind k, const char* what = nullptr) {
    if (!is(k)) fail_expected(what ? what : kind_name(k));
    return take();
  }
  const Token& expect_name(const char* what) {
    if (!is(TokenKind::ident)) fail_expected(what);
    if (is_keyword(cur().text)) fail(cur().loc, fmt::format("expected {}, found keyword '{}'", what, cur().text));
    return take();
  }
  void enter() {
    if (++depth_ > kMaxExprDepth)
      fail(cur().loc, fmt::format("expression nested too deeply: more than {} levels", kMaxExprDepth));
  }
  // A statement must end its line (or the block).
  void expect_statement_end() {
    if (is(TokenKind::rbrace) || is(TokenKind::eof) || cur().newline_before) return;
    fail(cur().loc, fmt::format("expected a line break or '}}' after the statement, found {}", describe(cur())));
  }

  /// model_block ::= 'model' ident '{' {model_stmt} '}'
  ast::ModelBlock parse_model() {
    take();
    ast::ModelBlock m;
    const Token& name = expect_name("a model name");
    m.name = name.text;
    m.loc = name.loc;
    expect(TokenKind::lbrace);
    while (!is(TokenKind::rbrace)) {
      if (is(TokenKind::eof)) fail_expected("'}' closing the model block");
      m.stmts.push_back(parse_model_stmt());
      expect_statement_end();
    }
    m.close_loc = take().loc;
    return m;
  }

  /// model_stmt ::= input_decl | assign
  ast::ModelStmt parse_model_stmt() {
    ast::ModelStmt s;
    if (is_ident("input")) {
      s.input = parse_input();
      return s;
    }
    s.assign = parse_assign("an input declaration or an assignment 'name = ...'");
    return s;
  }

  /// input_decl ::= 'input' ident ':' ident '[' [expr {',' expr}] ']'
  ast::InputDecl parse_input() {
    take();
    ast::InputDecl d;
    const Token& name = expect_name("an input name");
    d.name = name.text;
    d.loc = name.loc;
    expect(TokenKind::colon);
    const Token& dt = expect(TokenKind::ident, "a dtype (f32 or i64)");
    d.dtype = dt.text;
    d.dtype_loc = dt.loc;
    expect(TokenKind::lbracket, "'[' starting the shape");
    if (!is(TokenKind::rbracket)) {
      for (;;) {
        d.dims.push_back(parse_expr());
        if (!is(TokenKind::comma)) break;
        take();
      }
    }
    expect(TokenKind::rbracket, "',' or ']'");
    return d;
  }

  /// assign ::= ident '=' expr
  ast::Assign parse_assign(const char* what) {
    ast::Assign a;
    if (!is(TokenKind::ident)) fail_expected(what);
    if (is_keyword(cur().text)) fail(cur().loc, fmt::format("'{}' is a keyword and cannot be assigned", cur().text));
    const Token& name = take();
    a.name = name.text;
    a.loc = name.loc;
    expect(TokenKind::equals, "'='");
    a.value = parse_expr();
    return a;
  }

  /// train_block ::= 'train' ident '{' {assign} '}'
  ast::TrainBlock parse_train() {
    take();
    ast::TrainBlock t;
    const Token& name = expect_name("the model name after 'train'");
    t.name = name.text;
    t.loc = name.loc;
    expect(TokenKind::lbrace);
    while (!is(TokenKind::rbrace)) {
      if (is(TokenKind::eof)) fail_expected("'}' closing the train block");
      t.entries.push_back(parse_assign("a train setting 'name = value'"));
      expect_statement_end();
    }
    take();
    return t;
  }

  ExprPtr make(ExprKind k, ir::SourceLoc loc) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->loc = loc;
    return e;
  }

  /// expr ::= term {('+' | '-') term}
  /// Every expr (the statement's, each parenthesised one, each call argument) is one level
  /// of depth, and so is each operator of a chain and each unary minus.
  ExprPtr parse_expr() {
    int saved = depth_;
    enter();
    ExprPtr lhs = parse_term();
    while (is(TokenKind::plus) || is(TokenKind::minus)) {
      enter();  // each operator deepens the (left-leaning) tree
      const Token& op = take();
      ExprPtr e = make(ExprKind::binary, op.loc);
      e->op = op.text[0];
      e->elems.push_back(std::move(lhs));
      e->elems.push_back(parse_term());
      lhs = std::move(e);
    }
    depth_ = saved;
    return lhs;
  }

  /// term ::= unary {('*' | '/') unary}
  ExprPtr parse_term() {
    int saved = depth_;
    ExprPtr lhs = parse_unary();
    while (is(TokenKind::star) || is(TokenKind::slash)) {
      enter();
      const Token& op = take();
      ExprPtr e = make(ExprKind::binary, op.loc);
      e->op = op.text[0];
      e->elems.push_back(std::move(lhs));
      e->elems.push_back(parse_unary());
      lhs = std::move(e);
    }
    depth_ = saved;
    return lhs;
  }

  /// unary ::= '-' unary | primary
  ExprPtr parse_unary() {
    if (!is(TokenKind::minus)) return parse_primary();
    int saved = depth_;
    enter();
    ExprPtr e = make(ExprKind::neg, take().loc);
    e->elems.push_back(parse_unary());
    depth_ = saved;
    return e;
  }

  /// primary ::= int | float | 'true' | 'false' | string | ident | call | '(' expr ')' | tuple
  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.kind) {
      case TokenKind::int_lit: {
        ExprPtr e = make(ExprKind::int_lit, t.loc);
        e->int_value = take().int_value;
        return e;
      }
      case TokenKind::float_lit: {
        ExprPtr e = make(ExprKind::float_lit, t.loc);
        e->float_value = take().float_value;
        return e;
      }
      case TokenKind::string_lit: {
        ExprPtr e = make(ExprKind::string_lit, t.loc);
        e->name = take().text;
        return e;
      }
      case TokenKind::lparen: return parse_paren();
      case TokenKind::ident: break;
      case TokenKind::lbracket: fail_list();
      default: fail_expected("an expression");
    }
    if (t.text == "true" || t.text == "false") {
      ExprPtr e = make(ExprKind::bool_lit, t.loc);
      e->bool_value = take().text == "true";
      return e;
    }
    if (is_keyword(t.text)) fail(t.loc, fmt::format("expected an expression, found keyword '{}'", t.text));
    if (next().kind == TokenKind::lparen) return parse_call();
    ExprPtr e = make(ExprKind::ident, t.loc);
    e->name = take().text;
    return e;
  }

  /// paren ::= '(' expr ')'
  /// tuple ::= '(' expr ',' [expr {',' expr}] [','] ')'
  ExprPtr parse_paren() {
    ir::SourceLoc open = take().loc;
    ExprPtr first = parse_expr();
    if (is(TokenKind::rparen)) {
      take();
      return first;
    }
    ExprPtr tup = make(ExprKind::tuple, open);
    tup->elems.push_back(std::move(first));
    while (is(TokenKind::comma)) {
      take();
      if (is(TokenKind::rparen)) break;
      tup->elems.push_back(parse_expr());
    }
    expect_close(open, "");
    return tup;
  }

  // A Python list where .dnn takes a tuple: `kernel: [3, 3]`. Suggests the tuple when the list
  // is simple (numbers and names on one line).
  [[noreturn]] void fail_list() const {
    const Token& open = cur();
    std::vector<std::string> items;
    bool simple = true;
    size_t i = pos_ + 1;
    for (; i < toks_.size() && toks_[i].kind != TokenKind::rbracket; ++i) {
      const Token& t = toks_[i];
      if (t.newline_before || t.kind == TokenKind::eof) {
        simple = false;
        break;
      }
      if (t.kind == TokenKind::comma) continue;
      if (t.kind != TokenKind::int_lit && t.kind != TokenKind::float_lit && t.kind != TokenKind::ident) simple = false;
      items.push_back(t.text);
    }
    std::string tuple = simple && !items.empty() ? fmt::format("({}{})", fmt::join(items, ", "), items.size() == 1 ? "," : "")
                                                 : "(a, b)";
    fail(open.loc, fmt::format("expected an expression, found '['; .dnn writes a list of values as a tuple: {}", tuple));
  }

  // The ')' closing the '(' at `open` (of a call to `callee`, or a parenthesis/tuple if empty).
  // A line break before the token found instead means the '(' was left open: say so at the '('.
  void expect_close(ir::SourceLoc open, const std::string& callee) {
    if (is(TokenKind::rparen)) {
      take();
      return;
    }
    if (cur().newline_before || is(TokenKind::eof))
      fail(open, fmt::format("this '('{} is not closed: expected ',' or ')' before {} on line {}",
                             callee.empty() ? "" : " of " + callee + "(...)", describe(cur()), cur().loc.line));
    fail_expected("',' or ')'");
  }

  /// call ::= ident '(' [arg {',' arg} [',']] ')'
  ExprPtr parse_call() {
    const Token& callee = take();
    ExprPtr e = make(ExprKind::call, callee.loc);
    e->name = callee.text;
    ir::SourceLoc open = take().loc;  // '('
    while (!is(TokenKind::rparen)) {
      e->args.push_back(parse_arg());
      if (is(TokenKind::equals) && e->args.back().key.empty() && e->args.back().value &&
          e->args.back().value->kind == ExprKind::ident)  // PyTorch's kernel=3
        fail(cur().loc, fmt::format("expected ',' or ')', found '='; named arguments take ':' in .dnn: write "
                                    "'{}: ...'",
                                    e->args.back().value->name));
      if (!is(TokenKind::comma)) break;
      take();
    }
    expect_close(open, e->name);
    return e;
  }

  /// arg ::= [ident ':'] expr | normalize_arg
  ast::Arg parse_arg() {
    ast::Arg a;
    if (is(TokenKind::ident) && next().kind == TokenKind::colon) {
      a.key = cur().text;
      a.key_loc = take().loc;
      take();  // ':'
      if (a.key == "normalize") {
        a.value = parse_normalize(a.key_loc);
        return a;
      }
    }
    a.value = parse_expr();
    return a;
  }

  /// normalize_arg ::= 'normalize' ':' 'mean' expr ',' 'std' expr
  /// (a call-like node "normalize" with keyword args mean and std)
  ExprPtr parse_normalize(ir::SourceLoc at) {
    ExprPtr e = make(ExprKind::call, at);
    e->name = "normalize";
    for (const char* key : {"mean", "std"}) {
      if (std::string(key) == "std") expect(TokenKind::comma, "',' before 'std'");
      if (!is_ident(key)) fail_expected(fmt::format("'{}'", key));
      ast::Arg a;
      a.key = key;
      a.key_loc = take().loc;
      a.value = parse_expr();
      e->args.push_back(std::move(a));
    }
    return e;
  }
};

void dump_expr(const Expr& e, int indent, std::string& out);

void dump_line(int indent, const std::string& text, ir::SourceLoc loc, std::string& out) {
  out += fmt::format("{}{} @{}:{}\n", std::string(static_cast<size_t>(indent) * 2, ' '), text, loc.line, loc.col);
}

void dump_expr(const Expr& e, int indent, std::string& out) {
  switch (e.kind) {
    case ExprKind::int_lit: dump_line(indent, fmt::format("int {}", e.int_value), e.loc, out); return;
    case ExprKind::float_lit: dump_line(indent, fmt::format("float {}", e.float_value), e.loc, out); return;
    case ExprKind::bool_lit: dump_line(indent, e.bool_value ? "bool true" : "bool false", e.loc, out); return;
    case ExprKind::string_lit: dump_line(indent, fmt::format("string \"{}\"", e.name), e.loc, out); return;
    case ExprKind::ident: dump_line(indent, fmt::format("ident {}", e.name), e.loc, out); return;
    case ExprKind::tuple: dump_line(indent, "tuple", e.loc, out); break;
    case ExprKind::neg: dump_line(indent, "neg", e.loc, out); break;
    case ExprKind::binary: dump_line(indent, fmt::format("binary {}", e.op), e.loc, out); break;
    case ExprKind::call: dump_line(indent, fmt::format("call {}", e.name), e.loc, out); break;
  }
  for (const auto& c : e.elems) dump_expr(*c, indent + 1, out);
  for (const auto& a : e.args) {
    if (a.key.empty()) {
      dump_expr(*a.value, indent + 1, out);
      continue;
    }
    dump_line(indent + 1, fmt::format("key {}", a.key), a.key_loc, out);
    dump_expr(*a.value, indent + 2, out);
  }
}

}  // namespace

ast::File parse(const std::string& source, const std::string& file) {
  return Parser(lex(source, file), file).parse_file();
}

std::string dump_ast(const ast::File& f) {
  std::string out;
  dump_line(0, fmt::format("model {}", f.model.name), f.model.loc, out);
  for (const auto& s : f.model.stmts) {
    if (s.input) {
      dump_line(1, fmt::format("input {}: {}", s.input->name, s.input->dtype), s.input->loc, out);
      for (const auto& d : s.input->dims) dump_expr(*d, 2, out);
      continue;
    }
    dump_line(1, fmt::format("assign {}", s.assign->name), s.assign->loc, out);
    dump_expr(*s.assign->value, 2, out);
  }
  if (!f.train) return out;
  dump_line(0, fmt::format("train {}", f.train->name), f.train->loc, out);
  for (const auto& a : f.train->entries) {
    dump_line(1, fmt::format("set {}", a.name), a.loc, out);
    dump_expr(*a.value, 2, out);
  }
  return out;
}

}  // namespace dnnc::frontend
