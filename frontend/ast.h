// Abstract syntax tree of a .dnn file: a model block (inputs and assignments) and an
// optional train block. Every node carries the source location of its first token.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostic.h"

namespace dnnc::frontend::ast {

enum class ExprKind : uint8_t {
  int_lit,     // 784
  float_lit,   // 0.5
  bool_lit,    // true / false
  string_lit,  // "text"
  ident,       // image, fc1, N
  tuple,       // (3, 3)        elems = the entries (two or more, or one with a trailing comma)
  neg,         // -x            elems[0]
  binary,      // a + b         op in "+-*/", elems = {a, b}
  call,        // f(x, k: 2)    name = callee, args
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// One call argument: positional when `key` is empty, else `key: value`.
struct Arg {
  std::string key;
  ir::SourceLoc key_loc;
  ExprPtr value;
};

struct Expr {
  ExprKind kind = ExprKind::int_lit;
  ir::SourceLoc loc;  // literal/ident/callee/opening paren; the operator for neg/binary
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  std::string name;  // ident name, callee name, string contents
  char op = 0;       // '+', '-', '*', '/' for binary
  std::vector<ExprPtr> elems;
  std::vector<Arg> args;
};

/// input_decl ::= 'input' ident ':' ident '[' [expr {',' expr}] ']'
struct InputDecl {
  std::string name;
  ir::SourceLoc loc;  // of the name
  std::string dtype;
  ir::SourceLoc dtype_loc;
  std::vector<ExprPtr> dims;  // identifiers name the symbolic batch dim; others are sizes
};

/// assign ::= ident '=' expr   (a layer declaration when expr is a layer constructor call)
struct Assign {
  std::string name;
  ir::SourceLoc loc;  // of the name
  ExprPtr value;
};

struct ModelStmt {
  std::optional<InputDecl> input;  // exactly one of input / assign is set
  std::optional<Assign> assign;
};

struct ModelBlock {
  std::string name;
  ir::SourceLoc loc;        // of the name
  ir::SourceLoc close_loc;  // of the closing '}'
  std::vector<ModelStmt> stmts;
};

/// train_entry ::= ident '=' expr
struct TrainBlock {
  std::string name;
  ir::SourceLoc loc;
  std::vector<Assign> entries;
};

struct File {
  ModelBlock model;
  std::optional<TrainBlock> train;
};

}  // namespace dnnc::frontend::ast
