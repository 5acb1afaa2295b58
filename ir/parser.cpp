// Recursive-descent parser of the IR text form; grammar rules are on each function (docs/ir.md).
#include "ir/parser.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include "ir/op_registry.h"
#include "ir/text_lexer.h"

namespace dnnc::ir {
namespace {

using text::Tok;
using text::Token;

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : file_(file), toks_(text::lex(text, file)) {}

  /// module ::= 'module' name '{' module_item* '}'
  Module parse() {
    expect_keyword("module");
    m_.name = parse_name("a module name");
    expect_punct("{");
    while (!at_punct("}")) parse_module_item();
    advance();
    if (peek().kind != Tok::end) error(peek(), "end of input");
    return std::move(m_);
  }

 private:
  // ---- token helpers ----
  const Token& peek() const { return toks_[pos_]; }
  const Token& advance() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool at_punct(const char* p) const { return peek().kind == Tok::punct && peek().text == p; }
  bool at_keyword(const char* k) const { return peek().kind == Tok::ident && peek().text == k; }
  [[noreturn]] void error(const Token& t, const std::string& expected) const {
    throw CompileError(file_, t.loc, fmt::format("expected {}, found {}", expected, text::describe(t)));
  }
  [[noreturn]] void error_at(SourceLoc loc, const std::string& message) const {
    throw CompileError(file_, loc, message);
  }
  void expect_punct(const char* p) {
    if (!at_punct(p)) error(peek(), fmt::format("'{}'", p));
    advance();
  }
  void expect_keyword(const char* k) {
    if (!at_keyword(k)) error(peek(), fmt::format("'{}'", k));
    advance();
  }
  bool accept_punct(const char* p) {
    if (!at_punct(p)) return false;
    advance();
    return true;
  }
  /// name ::= ident | string
  std::string parse_name(const char* what) {
    if (peek().kind != Tok::ident && peek().kind != Tok::string) error(peek(), what);
    return advance().text;
  }
  int64_t parse_int(const char* what) {
    if (peek().kind != Tok::integer) error(peek(), what);
    return token_int(advance());
  }
  int64_t token_int(const Token& t) const {
    int64_t v = 0;
    const char* b = t.text.data() + (t.text[0] == '+' ? 1 : 0);
    auto [p, ec] = std::from_chars(b, t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size())
      error_at(t.loc, fmt::format("expected a 64-bit integer, found {}", t.text));
    return v;
  }
  // float ::= integer | floating | 'nan' | 'inf' | '-inf'
  bool at_float() const {
    return peek().kind == Tok::integer || peek().kind == Tok::floating ||
           (peek().kind == Tok::ident && (peek().text == "nan" || peek().text == "inf"));
  }
  double parse_float(const char* what) {
    if (!at_float()) error(peek(), what);
    return token_double(advance());
  }
  double token_double(const Token& t) const {
    if (t.text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (t.text == "inf") return std::numeric_limits<double>::infinity();
    if (t.text == "-inf") return -std::numeric_limits<double>::infinity();
    double v = 0;
    const char* b = t.text.data() + (t.text[0] == '+' ? 1 : 0);
    auto [p, ec] = std::from_chars(b, t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size())
      error_at(t.loc, fmt::format("expected a finite double, found {}", t.text));
    return v;
  }

  // ---- module level ----
  /// module_item ::= 'source' string | 'batch' name | param | train | graph
  void parse_module_item() {
    if (at_keyword("source")) {
      advance();
      if (peek().kind != Tok::string) error(peek(), "a quoted source file name");
      m_.source_file = advance().text;
    } else if (at_keyword("batch")) {
      advance();
      m_.batch_symbol = parse_name("a batch symbol");
    } else if (at_keyword("param")) {
      parse_param();
    } else if (at_keyword("train")) {
      parse_train();
    } else if (at_keyword("graph")) {
      parse_graph();
    } else {
      error(peek(), "'source', 'batch', 'param', 'train', 'graph' or '}'");
    }
  }

  /// loc ::= 'loc' '(' int ':' int ')'   (optional everywhere it appears)
  SourceLoc parse_opt_loc() {
    if (!at_keyword("loc")) return {};
    advance();
    expect_punct("(");
    SourceLoc loc;
    loc.line = static_cast<int>(parse_int("a line number"));
    expect_punct(":");
    loc.col = static_cast<int>(parse_int("a column number"));
    expect_punct(")");
    return loc;
  }

  /// type ::= dtype '[' [dim (',' dim)*] ']' ['{' layout '}'];  dim ::= int | batch-symbol
  TensorType parse_type() {
    TensorType t;
    if (peek().kind != Tok::ident || !parse_dtype(peek().text)) error(peek(), "a type (f32[...] or i64[...])");
    t.dtype = *parse_dtype(advance().text);
    expect_punct("[");
    if (!at_punct("]")) {
      do {
        if (peek().kind == Tok::ident && peek().text == m_.batch_symbol) {
          advance();
          t.shape.push_back(kBatch);
        } else if (peek().kind == Tok::integer) {
          t.shape.push_back(parse_int("a dimension"));
        } else {
          error(peek(), fmt::format("a dimension (an integer or the batch symbol {})", m_.batch_symbol));
        }
      } while (accept_punct(","));
    }
    expect_punct("]");
    if (accept_punct("{")) {
      if (peek().kind != Tok::ident || !parse_layout(peek().text)) error(peek(), "a layout (nhwc or col_major)");
      t.layout = *parse_layout(advance().text);
      expect_punct("}");
    }
    return t;
  }

  /// param ::= 'param' '@'name ':' type role ['init' '=' name ['(' float ')']] [loc]
  void parse_param() {
    advance();
    Param p;
    const Token& name = peek();
    if (name.kind != Tok::param) error(name, "a param name (@name)");
    p.name = advance().text;
    if (m_.param(p.name)) error_at(name.loc, fmt::format("param @{} is declared twice", p.name));
    expect_punct(":");
    p.type = parse_type();
    const Token& role = peek();
    if (role.kind != Tok::ident) error(role, "a param role (weight, buffer or optimizer_state)");
    if (role.text == "weight")
      p.role = ParamRole::weight;
    else if (role.text == "buffer")
      p.role = ParamRole::buffer;
    else if (role.text == "optimizer_state")
      p.role = ParamRole::optimizer_state;
    else
      error(role, "a param role (weight, buffer or optimizer_state)");
    advance();
    if (at_keyword("init")) {
      advance();
      expect_punct("=");
      p.init.kind = parse_name("an init kind (uniform, zeros, ones)");
      p.init.bound = 0.0;
      if (accept_punct("(")) {
        p.init.bound = parse_float("an init bound");
        expect_punct(")");
      }
    }
    p.loc = parse_opt_loc();
    m_.params.push_back(std::move(p));
  }

  /// attr_dict ::= '{' [name '=' attr_value (',' name '=' attr_value)*] '}'
  Attrs parse_attr_dict() {
    Attrs attrs;
    expect_punct("{");
    if (!at_punct("}")) {
      do {
        const Token& key = peek();
        std::string k = parse_name("an attribute name");
        expect_punct("=");
        if (!attrs.emplace(k, parse_attr_value()).second)
          error_at(key.loc, fmt::format("attribute '{}' is given twice", k));
      } while (accept_punct(","));
    }
    expect_punct("}");
    return attrs;
  }

  /// attr_value ::= int | float | 'true' | 'false' | string | '[' [number (',' number)*] ']'
  /// A list with any float in it is a float list; `[]` is an int list (see parse_node for floats).
  AttrValue parse_attr_value() {
    const Token& t = peek();
    if (t.kind == Tok::string) return advance().text;
    if (t.kind == Tok::ident && (t.text == "true" || t.text == "false")) return advance().text == "true";
    if (t.kind == Tok::integer) return parse_int("an integer");
    if (at_float()) return parse_float("a number");
    if (!at_punct("[")) error(t, "an attribute value (number, true, false, string or list)");
    advance();
    std::vector<Token> items;
    if (!at_punct("]")) {
      do {
        if (!at_float()) error(peek(), "a number");
        items.push_back(peek());
        advance();
      } while (accept_punct(","));
    }
    expect_punct("]");
    bool any_float = false;
    for (const Token& i : items) any_float = any_float || i.kind != Tok::integer;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    for (const Token& i : items) {
      if (any_float)
        floats.push_back(token_double(i));
      else
        ints.push_back(token_int(i));
    }
    if (any_float) return floats;
    return ints;
  }

  /// train ::= 'train' '{' train_field (',' train_field)* '}' 'optimizer' string attr_dict
  ///           ['schedule' string attr_dict] [loc]
  /// train_field ::= ('data' '=' string | 'mean' '=' list | 'std' '=' list | 'crop_padding' '=' int
  ///                 | 'flip_p' '=' number | 'batch' '=' int | 'epochs' '=' int | 'seed' '=' int
  ///                 | 'clip_grad_norm' '=' number)
  void parse_train() {
    const Token& start = advance();
    if (m_.train.present) error_at(start.loc, "a second train config; expected one, found two");
    TrainConfig& t = m_.train;
    t.present = true;
    expect_punct("{");
    if (!at_punct("}")) {
      do {
        const Token& key = peek();
        std::string k = parse_name("a train field");
        expect_punct("=");
        if (k == "data") {
          if (peek().kind != Tok::string) error(peek(), "a quoted dataset name");
          t.data.dataset = advance().text;
        } else if (k == "mean" || k == "std") {
          AttrValue v = parse_attr_value();
          std::vector<double> xs;
          if (auto* f = std::get_if<std::vector<double>>(&v))
            xs = *f;
          else if (auto* i = std::get_if<std::vector<int64_t>>(&v))
            xs.assign(i->begin(), i->end());
          else
            error_at(key.loc, fmt::format("expected a list of numbers for '{}', found {}", k, attr_to_string(v)));
          (k == "mean" ? t.data.mean : t.data.std) = xs;
        } else if (k == "batch") {
          t.batch = parse_int("an integer batch size");
        } else if (k == "epochs") {
          t.epochs = parse_int("an integer epoch count");
        } else if (k == "seed") {
          t.seed = parse_int("an integer seed");
        } else if (k == "crop_padding") {
          t.data.crop_padding = parse_int("an integer crop padding");
        } else if (k == "clip_grad_norm" || k == "flip_p") {
          AttrValue v = parse_attr_value();
          double x = 0;
          if (auto* f = std::get_if<double>(&v))
            x = *f;
          else if (auto* i = std::get_if<int64_t>(&v))
            x = static_cast<double>(*i);
          else
            error_at(key.loc, fmt::format("expected a number for '{}', found {}", k, attr_to_string(v)));
          (k == "flip_p" ? t.data.flip_p : t.clip_grad_norm) = x;
        } else {
          error(key, "a train field (data, mean, std, crop_padding, flip_p, batch, epochs, seed, clip_grad_norm)");
        }
      } while (accept_punct(","));
    }
    expect_punct("}");
    expect_keyword("optimizer");
    if (peek().kind != Tok::string) error(peek(), "a quoted optimizer kind");
    t.optimizer.kind = advance().text;
    t.optimizer.attrs = parse_attr_dict();
    if (at_keyword("schedule")) {
      advance();
      if (peek().kind != Tok::string) error(peek(), "a quoted schedule kind");
      t.schedule.kind = advance().text;
      t.schedule.attrs = parse_attr_dict();
    }
    t.loc = parse_opt_loc();
  }

  // ---- graphs ----
  /// graph ::= 'graph' name '(' [arg (',' arg)*] ')' '{' stmt* '}';  arg ::= '%'name ':' type
  void parse_graph() {
    advance();
    const Token& name_tok = peek();
    Graph g;
    g.name = parse_name("a graph name");
    if (m_.graph(g.name)) error_at(name_tok.loc, fmt::format("graph '{}' is defined twice", g.name));
    locals_.clear();
    expect_punct("(");
    if (!at_punct(")")) {
      do {
        const Token& arg = peek();
        if (arg.kind != Tok::value) error(arg, "an input (%name)");
        std::string n = advance().text;
        check_new_local(arg, n);
        expect_punct(":");
        locals_[n] = g.add_input(n, parse_type());
      } while (accept_punct(","));
    }
    expect_punct(")");
    expect_punct("{");
    while (!at_punct("}")) parse_stmt(g);
    advance();
    m_.graphs.push_back(std::move(g));
  }

  /// fused ::= 'fused' string '{' (role ':' node)* '}'
  void parse_fused(Graph& g) {
    advance();
    const Token& kind = peek();
    if (kind.kind != Tok::string) error(kind, "the fusion pattern as a string");
    g.groups.push_back(FusionGroup{advance().text});
    expect_punct("{");
    size_t first = g.nodes.size();
    while (!at_punct("}")) {
      if (at_keyword("return") || at_keyword("update") || at_keyword("fused"))
        error(peek(), "a node inside a fused group");
      std::string role;
      if (peek().kind == Tok::ident) {  // the node's role in the pattern
        role = advance().text;
        expect_punct(":");
      }
      size_t before = g.nodes.size();
      parse_stmt(g);
      if (g.nodes.size() == before + 1) g.nodes.back().role = role;
    }
    const Token& close = peek();
    advance();
    if (g.nodes.size() == first) error_at(close.loc, "expected at least one node in a fused group, found none");
    for (size_t i = first; i < g.nodes.size(); ++i) g.nodes[i].group = static_cast<int32_t>(g.groups.size() - 1);
  }

  void check_new_local(const Token& at, const std::string& name) {
    if (name.empty()) error_at(at.loc, "expected a non-empty value name, found %\"\"");
    if (locals_.count(name)) error_at(at.loc, fmt::format("redefinition of value %{}", name));
  }

  /// operand ::= '%'name | '@'name
  ValueId parse_operand(Graph& g) {
    const Token& t = peek();
    if (t.kind == Tok::value) {
      auto it = locals_.find(t.text);
      if (it == locals_.end()) error_at(t.loc, fmt::format("use of undefined value %{}", t.text));
      advance();
      return it->second;
    }
    if (t.kind == Tok::param) {
      const Param* p = m_.param(t.text);
      if (!p) error_at(t.loc, fmt::format("use of unknown param @{} (params must be declared before graphs)", t.text));
      advance();
      return g.param(p->name, p->type);
    }
    error(t, "an operand (%value or @param)");
  }

  /// stmt ::= 'return' [operand (',' operand)*] | 'update' '@'name '=' operand | node
  /// node ::= ['%'name (',' '%'name)* '='] name '(' [operand (',' operand)*] ')' [attr_dict]
  ///          [':' type (',' type)*] [loc]
  void parse_stmt(Graph& g) {
    if (at_keyword("fused")) {
      parse_fused(g);
      return;
    }
    if (at_keyword("return")) {
      advance();
      if (peek().kind == Tok::value || peek().kind == Tok::param) {
        do g.outputs.push_back(parse_operand(g));
        while (accept_punct(","));
      }
      return;
    }
    if (at_keyword("update")) {
      advance();
      const Token& p = peek();
      if (p.kind != Tok::param) error(p, "a param to update (@name)");
      if (!m_.param(p.text)) error_at(p.loc, fmt::format("update of unknown param @{}", p.text));
      std::string name = advance().text;
      expect_punct("=");
      g.updates.emplace_back(name, parse_operand(g));
      return;
    }
    std::vector<const Token*> results;
    if (peek().kind == Tok::value) {
      do {
        if (peek().kind != Tok::value) error(peek(), "a result (%name)");
        results.push_back(&peek());
        advance();
      } while (accept_punct(","));
      expect_punct("=");
    }
    std::string op = parse_name("an op name");
    expect_punct("(");
    std::vector<ValueId> inputs;
    if (!at_punct(")")) {
      do inputs.push_back(parse_operand(g));
      while (accept_punct(","));
    }
    expect_punct(")");
    Attrs attrs;
    if (at_punct("{")) attrs = parse_attr_dict();
    coerce_empty_float_lists(op, attrs);
    std::vector<TensorType> types;
    const Token& colon = peek();
    if (accept_punct(":")) {
      do types.push_back(parse_type());
      while (accept_punct(","));
    }
    if (types.size() != results.size())
      error_at(colon.loc,
               fmt::format("expected {} result types (one per result), found {}", results.size(), types.size()));
    SourceLoc loc = parse_opt_loc();
    std::vector<std::string> names;
    for (const Token* r : results) {
      check_new_local(*r, r->text);
      for (const std::string& n : names)
        if (n == r->text) error_at(r->loc, fmt::format("redefinition of value %{}", n));
      names.push_back(r->text);
    }
    std::vector<ValueId> outs = g.add_node(op, std::move(inputs), std::move(attrs), types, loc, names);
    for (size_t i = 0; i < outs.size(); ++i) locals_[names[i]] = outs[i];
  }

  // `[]` parses as an empty int list; where the op's schema says floats it is an empty float list.
  static void coerce_empty_float_lists(const std::string& op, Attrs& attrs) {
    const OpDef* def = find_op(op);
    if (!def) return;
    for (const AttrSpec& s : def->attrs) {
      auto it = attrs.find(s.name);
      if (it == attrs.end() || s.kind != AttrKind::floats) continue;
      if (auto* ints = std::get_if<std::vector<int64_t>>(&it->second); ints && ints->empty())
        it->second = std::vector<double>{};
    }
  }

  const std::string& file_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  Module m_;
  std::map<std::string, ValueId> locals_;  // %names of the graph being parsed
};

}  // namespace

Module parse_module(const std::string& text, const std::string& filename) { return Parser(text, filename).parse(); }

}  // namespace dnnc::ir
