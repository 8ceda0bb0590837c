// Recursive-descent PTX parser (PTX ISA chapters "Syntax", "State Spaces, Types, and
// Variables", "Directives", "Instructions"). On an error it reports line:column and skips to
// the end of the statement, so the rest of the module still parses.
#include "ptx_transform/parser.h"

#include <fmt/format.h>

#include "ptx_transform/internal/lexer.h"
#include "ptx_transform/internal/opcodes.h"
#include "ptx_transform/internal/operators.h"
#include "ptx_transform/internal/parse_number.h"

namespace tally::ptx {
namespace {

using internal::Token;
using internal::TokenKind;

constexpr std::string_view kStateSpaces[] = {"global", "shared", "const", "local",
                                             "param",  "tex",    "reg"};
constexpr std::string_view kLinkages[] = {"visible", "extern", "weak", "common"};

template <size_t N>
bool OneOf(std::string_view s, const std::string_view (&set)[N]) {
  for (std::string_view x : set)
    if (s == x) return true;
  return false;
}

// Thrown only inside the parser to unwind to the statement level after a syntax error has
// been reported; never escapes ParseModule.
struct SyntaxError {};

class Parser {
 public:
  Parser(std::string_view source, DiagnosticSink& sink)
      : source_(source), sink_(sink), tokens_(internal::Tokenize(source, sink)) {}

  Module Run() {
    Module module;
    while (!AtEnd()) {
      size_t before = pos_;
      try {
        ParseTopLevel(module);
      } catch (const SyntaxError&) {
        RecoverTopLevel();
      }
      if (pos_ == before) Advance();  // guarantee progress on any input
    }
    if (module.version_major == 0) sink_.Error({1, 1}, "missing .version directive");
    if (module.targets.empty()) sink_.Error({1, 1}, "missing .target directive");
    return module;
  }

 private:
  // ---- token access -------------------------------------------------------------------------
  const Token& Peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  bool AtEnd() const { return Peek().kind == TokenKind::kEnd; }
  const Token& Advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool TryPunct(char p) {
    if (!Peek().IsPunct(p)) return false;
    Advance();
    return true;
  }
  [[noreturn]] void Fail(const Token& at, std::string message) {
    sink_.Error(at.location(), std::move(message));
    throw SyntaxError{};
  }
  std::string Describe(const Token& t) const {
    if (t.kind == TokenKind::kEnd) return "end of file";
    if (t.kind == TokenKind::kDotName) return fmt::format("'.{}'", t.text);
    return fmt::format("'{}'", t.text);
  }
  void ExpectPunct(char p) {
    if (!TryPunct(p)) Fail(Peek(), fmt::format("expected '{}', found {}", p, Describe(Peek())));
  }
  std::string_view ExpectIdentifier(std::string_view what) {
    if (Peek().kind != TokenKind::kIdentifier) {
      Fail(Peek(), fmt::format("expected {}, found {}", what, Describe(Peek())));
    }
    return Advance().text;
  }
  uint64_t ExpectUnsigned(std::string_view what) {
    const Token& t = Peek();
    if (t.kind != TokenKind::kInteger) {
      Fail(t, fmt::format("expected {}, found {}", what, Describe(t)));
    }
    auto value = internal::ParseInteger(t.text);
    if (!value) Fail(t, fmt::format("integer constant out of range: {}", t.text));
    Advance();
    return value->bits;
  }
  uint32_t ExpectU32(std::string_view what) {
    const Token& t = Peek();
    uint64_t v = ExpectUnsigned(what);
    if (v > UINT32_MAX) Fail(t, fmt::format("{} too large: {}", what, t.text));
    return static_cast<uint32_t>(v);
  }

  // Skips to just after the next `;` or `}` at nesting depth 0 (or to the next top-level
  // `.entry`/`.func`/variable), so that one bad statement costs one diagnostic.
  void RecoverTopLevel() {
    int depth = 0;
    while (!AtEnd()) {
      const Token& t = Peek();
      if (t.IsPunct('{')) ++depth;
      if (t.IsPunct('}') && --depth <= 0) {
        Advance();
        return;
      }
      if (depth == 0 && t.IsPunct(';')) {
        Advance();
        return;
      }
      if (depth == 0 && t.kind == TokenKind::kDotName && IsTopLevelStart(t.text.substr(1))) {
        return;  // Run() advances past it if nothing consumed it, so this cannot loop
      }
      Advance();
    }
  }
  static bool IsTopLevelStart(std::string_view d) {
    return d == "entry" || d == "func" || d == "visible" || d == "extern" || d == "weak" ||
           d == "version" || d == "target" || d == "address_size";
  }
  void RecoverStatement() {
    while (!AtEnd()) {
      const Token& t = Peek();
      if (t.IsPunct(';')) {
        Advance();
        return;
      }
      if (t.IsPunct('}') || t.IsPunct('{')) return;
      Advance();
    }
  }

  // ---- module level ------------------------------------------------------------------------
  void ParseTopLevel(Module& module) {
    const Token& t = Peek();
    if (t.kind != TokenKind::kDotName) {
      Fail(t, fmt::format("expected a directive at module scope, found {}", Describe(t)));
    }
    std::string_view d = t.text.substr(1);
    if (d == "version") {
      Advance();
      const Token& v = Peek();
      if (v.kind != TokenKind::kFloat) Fail(v, "expected version number like 8.5");
      size_t dot = v.text.find('.');
      auto major = internal::ParseInteger(v.text.substr(0, dot));
      auto minor =
          internal::ParseInteger(dot == std::string_view::npos ? "" : v.text.substr(dot + 1));
      if (dot == std::string_view::npos || !major || !minor || major->bits > 99 ||
          minor->bits > 99) {
        Fail(v, fmt::format("malformed .version {}", v.text));
      }
      module.version_major = static_cast<uint32_t>(major->bits);
      module.version_minor = static_cast<uint32_t>(minor->bits);
      Advance();
    } else if (d == "target") {
      Advance();
      do {
        module.targets.emplace_back(ExpectIdentifier("target name"));
      } while (TryPunct(','));
    } else if (d == "address_size") {
      Advance();
      const Token& at = Peek();
      module.address_size = ExpectU32("address size");
      if (module.address_size != 32 && module.address_size != 64) {
        Fail(at, ".address_size must be 32 or 64");
      }
      module.has_address_size = true;
    } else if (d == "entry" || d == "func" || IsFunctionAhead()) {
      module.items.push_back({ParseFunction()});
    } else if (d == "file" || d == "loc" || d == "section" || d == "pragma" || d == "alias" ||
               !IsVariableStart(d)) {
      module.items.push_back({ParseDirective()});
    } else {
      std::vector<VarDecl> vars = ParseVarDecl(/*is_param=*/false);
      for (auto& v : vars) module.items.push_back({std::move(v)});
    }
  }

  bool IsVariableStart(std::string_view d) const {
    return OneOf(d, kStateSpaces) || OneOf(d, kLinkages);
  }

  // Linkage directives are followed either by a variable or by `.entry`/`.func`.
  bool IsFunctionAhead() const {
    for (size_t i = 0;; ++i) {
      const Token& t = Peek(i);
      if (t.kind != TokenKind::kDotName) return false;
      std::string_view d = t.text.substr(1);
      if (d == "entry" || d == "func") return true;
      if (!OneOf(d, kLinkages)) return false;
    }
  }

  // ---- directives kept as text -------------------------------------------------------------
  // `.loc`/`.file` end at the end of their line, `.section` at its closing brace, everything
  // else at `;`.
  Directive ParseDirective() {
    const Token& head = Advance();
    Directive dir;
    dir.location = head.location();
    dir.name = std::string(head.text.substr(1));
    size_t first = pos_;
    size_t last = pos_;  // one past the last token of the arguments
    if (dir.name == "loc" || dir.name == "file") {
      while (!AtEnd() && Peek().line == head.line) Advance();
      last = pos_;
    } else if (dir.name == "section") {
      int depth = 0;
      while (!AtEnd()) {
        const Token& t = Advance();
        if (t.IsPunct('{')) ++depth;
        if (t.IsPunct('}') && --depth == 0) break;
      }
      if (depth != 0) Fail(head, "unterminated .section");
      last = pos_;
    } else {
      while (!AtEnd() && !Peek().IsPunct(';')) {
        if (Peek().IsPunct('{') || Peek().IsPunct('}')) {
          Fail(Peek(), fmt::format("expected ';' to end .{}", dir.name));
        }
        Advance();
      }
      last = pos_;
      ExpectPunct(';');
      dir.has_semicolon = true;
    }
    dir.args = SourceSpan(first, last);
    return dir;
  }

  // The source text from token `first` up to the end of token `last - 1`, as written.
  std::string SourceSpan(size_t first, size_t last) const {
    if (last <= first) return {};
    const Token& a = tokens_[first];
    const Token& b = tokens_[last - 1];
    return std::string(source_.substr(a.offset, b.offset + b.text.size() - a.offset));
  }

  // ---- variables and parameters -------------------------------------------------------------
  // `[linkage] .space [.attribute(...)] [.align N] [.vN] .type [.ptr [.space] [.align N]]
  //  name[dims] [= init] {, name[dims] [= init]} ;` -- for parameters only one name and no `;`.
  std::vector<VarDecl> ParseVarDecl(bool is_param) {
    VarDecl base;
    base.location = Peek().location();
    while (Peek().kind == TokenKind::kDotName && OneOf(Peek().text.substr(1), kLinkages)) {
      base.linkage = std::string(Advance().text.substr(1));
    }
    const Token& space = Peek();
    if (space.kind != TokenKind::kDotName || !OneOf(space.text.substr(1), kStateSpaces)) {
      Fail(space, fmt::format("expected a state space, found {}", Describe(space)));
    }
    base.state_space = std::string(Advance().text.substr(1));
    while (Peek().kind == TokenKind::kDotName) {
      const Token& m = Peek();
      std::string_view d = m.text.substr(1);
      if (d == "align") {
        Advance();
        uint64_t a = ExpectUnsigned("alignment");
        if (a == 0 || (a & (a - 1)) != 0) Fail(m, "alignment must be a power of two");
        (base.is_ptr ? base.ptr_align : base.align) = a;
      } else if (d == "ptr") {
        Advance();
        base.is_ptr = true;
      } else if (d == "attribute") {
        Advance();
        ExpectPunct('(');
        do {
          const Token& a = Peek();
          if (a.kind != TokenKind::kDotName) Fail(a, "expected attribute like .managed");
          std::string attribute(Advance().text.substr(1));
          // `.unified(uuid1, uuid2)` carries arguments; keep them verbatim.
          if (Peek().IsPunct('(')) {
            size_t first = pos_;
            while (!AtEnd() && !Peek().IsPunct(')')) Advance();
            ExpectPunct(')');
            attribute += SourceSpan(first, pos_);
          }
          base.attributes.push_back(std::move(attribute));
        } while (TryPunct(','));
        ExpectPunct(')');
      } else if (d == "v2" || d == "v4" || d == "v8") {
        Advance();
        base.vector_width = static_cast<uint32_t>(d[1] - '0');
      } else if (base.is_ptr && OneOf(d, kStateSpaces)) {
        base.ptr_space = std::string(Advance().text.substr(1));
      } else if (base.type.empty()) {
        base.type = std::string(Advance().text.substr(1));
      } else {
        Fail(m, fmt::format("unexpected {} in declaration", Describe(m)));
      }
    }
    if (base.type.empty()) Fail(Peek(), "declaration without a type");

    std::vector<VarDecl> vars;
    do {
      VarDecl v = base;
      v.location = Peek().location();
      v.name = std::string(ExpectIdentifier("variable name"));
      while (TryPunct('[')) {
        if (TryPunct(']')) {
          v.dims.push_back(std::nullopt);
          continue;
        }
        const Token& at = Peek();
        Expr size = ParseExpr();
        auto n = EvaluateConstant(size);
        if (!n || *n < 0) Fail(at, "array size must be a non-negative constant");
        v.dims.push_back(static_cast<uint64_t>(*n));
        ExpectPunct(']');
      }
      if (TryPunct('=')) {
        if (is_param) Fail(Peek(), "parameters cannot have initialisers");
        v.initializer = Peek().IsPunct('{') ? ParseList() : ParseExpr();
      }
      vars.push_back(std::move(v));
    } while (!is_param && TryPunct(','));
    if (!is_param) ExpectPunct(';');
    return vars;
  }

  RegDecl ParseRegDecl() {
    RegDecl decl;
    decl.location = Advance().location();  // `.reg`
    while (Peek().kind == TokenKind::kDotName) {
      std::string_view d = Peek().text.substr(1);
      if (d == "v2" || d == "v4" || d == "v8") {
        decl.vector_width = static_cast<uint32_t>(d[1] - '0');
      } else if (decl.type.empty()) {
        decl.type = std::string(d);
      } else {
        Fail(Peek(), fmt::format("unexpected {} in .reg declaration", Describe(Peek())));
      }
      Advance();
    }
    if (decl.type.empty()) Fail(Peek(), ".reg declaration without a type");
    do {
      RegDecl::Entry entry;
      entry.name = std::string(ExpectIdentifier("register name"));
      if (TryPunct('<')) {
        entry.count = ExpectU32("register count");
        ExpectPunct('>');
      }
      decl.entries.push_back(std::move(entry));
    } while (TryPunct(','));
    ExpectPunct(';');
    return decl;
  }

  // ---- functions ---------------------------------------------------------------------------
  std::vector<VarDecl> ParseParamList() {
    std::vector<VarDecl> params;
    ExpectPunct('(');
    if (TryPunct(')')) return params;
    do {
      std::vector<VarDecl> one = ParseVarDecl(/*is_param=*/true);
      params.push_back(std::move(one.front()));
    } while (TryPunct(','));
    ExpectPunct(')');
    return params;
  }

  Function ParseFunction() {
    Function f;
    f.location = Peek().location();
    while (Peek().kind == TokenKind::kDotName && OneOf(Peek().text.substr(1), kLinkages)) {
      f.linkage = std::string(Advance().text.substr(1));
    }
    f.is_entry = Advance().text == ".entry";
    if (!f.is_entry && Peek().IsPunct('(')) {
      f.has_return_list = true;
      f.returns = ParseParamList();
    }
    f.name = std::string(ExpectIdentifier("function name"));
    f.has_param_list = Peek().IsPunct('(');
    if (f.has_param_list) f.params = ParseParamList();
    while (Peek().kind == TokenKind::kDotName) {
      f.performance_directives.push_back(ParsePerformanceDirective());
    }
    if (TryPunct(';')) return f;
    f.body = ParseBlock();
    return f;
  }

  // `.maxntid 256, 1, 1`, `.noreturn`, `.pragma "nounroll";` between the signature and body.
  Directive ParsePerformanceDirective() {
    if (Peek().text == ".pragma") return ParseDirective();
    const Token& head = Advance();
    Directive dir;
    dir.location = head.location();
    dir.name = std::string(head.text.substr(1));
    size_t first = pos_;
    while (Peek().kind == TokenKind::kInteger || Peek().IsPunct(',')) Advance();
    dir.args = SourceSpan(first, pos_);
    return dir;
  }

  Block ParseBlock() {
    NestingGuard guard(*this);
    Block block;
    block.location = Peek().location();
    ExpectPunct('{');
    block.statements.reserve(CountStatementsAhead());
    while (true) {
      if (AtEnd()) Fail(Peek(), "unexpected end of file: missing '}'");
      if (TryPunct('}')) break;
      size_t before = pos_;
      try {
        ParseStatement(block.statements);
      } catch (const SyntaxError&) {
        RecoverStatement();
      }
      if (pos_ == before && !Peek().IsPunct('}')) Advance();
    }
    return block;
  }

  // An upper bound on the statements of the block that starts here (`;`, labels and nested
  // blocks up to the matching `}`), so that the statement vector is allocated once.
  size_t CountStatementsAhead() const {
    size_t count = 0;
    int depth = 0;
    for (size_t i = pos_; i < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      if (t.kind != TokenKind::kPunct) continue;
      char c = t.text[0];
      if (c == ';' || c == ':') ++count;
      if (c == '{') ++depth, ++count;
      if (c == '}' && depth-- == 0) break;
    }
    return count;
  }

  void ParseStatement(std::vector<Statement>& out) {
    const Token& t = Peek();
    if (t.IsPunct('{')) {
      out.push_back({ParseBlock()});
      return;
    }
    if (t.kind == TokenKind::kDotName) {
      std::string_view d = t.text.substr(1);
      if (d == "reg") {
        out.push_back({ParseRegDecl()});
      } else if (OneOf(d, kStateSpaces) || OneOf(d, kLinkages)) {
        for (auto& v : ParseVarDecl(/*is_param=*/false))
          out.push_back({Box<VarDecl>(std::move(v))});
      } else {
        out.push_back({ParseDirective()});
      }
      return;
    }
    if (t.kind == TokenKind::kIdentifier && Peek(1).IsPunct(':')) {
      out.push_back({Label{t.location(), std::string(t.text)}});
      Advance();
      Advance();
      return;
    }
    // Instructions are most statements: build them in place (a default Statement holds an
    // empty Instruction) instead of moving a finished one in.
    try {
      ParseInstruction(std::get<Instruction>(out.emplace_back().value));
    } catch (const SyntaxError&) {
      out.pop_back();
      throw;
    }
  }

  // ---- instructions ------------------------------------------------------------------------
  void ParseInstruction(Instruction& inst) {
    inst.location = Peek().location();
    if (TryPunct('@')) {
      inst.guard_negated = TryPunct('!');
      inst.guard = ExpectIdentifier("guard predicate");
    }
    const Token& opcode = Peek();
    inst.opcode = ExpectIdentifier("instruction");
    if (!internal::IsKnownOpcode(inst.opcode)) {
      Fail(opcode, fmt::format("unknown instruction '{}'", inst.opcode));
    }
    size_t modifiers = 0;
    while (Peek(modifiers).kind == TokenKind::kDotName) ++modifiers;
    inst.modifiers.reserve(modifiers);
    for (size_t i = 0; i < modifiers; ++i) inst.modifiers.emplace_back(Advance().text.substr(1));
    bool is_call = inst.opcode == "call";
    if (!Peek().IsPunct(';')) {
      inst.operands.reserve(CountOperandsAhead());
      do {
        ParseOperand(inst.operands.emplace_back(), is_call);
      } while (TryPunct(','));
    }
    ExpectPunct(';');
  }

  // Number of top-level comma-separated operands before the next `;`, to size the vector once.
  size_t CountOperandsAhead() const {
    size_t count = 1;
    int depth = 0;
    for (size_t i = pos_; i < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      if (t.kind != TokenKind::kPunct) continue;
      char c = t.text[0];
      if (c == ';') break;
      if (c == '[' || c == '{' || c == '(') ++depth;
      if (c == ']' || c == '}' || c == ')') --depth;
      if (c == ',' && depth == 0) ++count;
    }
    return count;
  }

  // Parses one operand into `op` (a fresh Operand): operands are built where they will live.
  void ParseOperand(Operand& op, bool parens_are_lists) {
    NestingGuard guard(*this);
    const Token& t = Peek();
    if (t.IsPunct('[')) {
      Advance();
      op.kind = Operand::Kind::kAddress;
      do {
        ParseAddressPart(op.elements.emplace_back());
      } while (TryPunct(','));
      ExpectPunct(']');
      return;
    }
    if (t.IsPunct('{') || (parens_are_lists && t.IsPunct('('))) {
      bool vector = t.IsPunct('{');
      char close = vector ? '}' : ')';
      Advance();
      op.kind = vector ? Operand::Kind::kVector : Operand::Kind::kParenList;
      if (!Peek().IsPunct(close)) {
        do {
          ParseOperand(op.elements.emplace_back(), false);
        } while (TryPunct(','));
      }
      ExpectPunct(close);
      return;
    }
    if (t.IsPunct('!') && Peek(1).kind == TokenKind::kIdentifier) {
      Advance();
      ParseNameOperand(op);
      op.negated = true;
      return;
    }
    // `(`: `generic(sym)`; WARP_SZ is a constant, so `WARP_SZ*2` is an expression.
    if (t.kind == TokenKind::kIdentifier && !Peek(1).IsPunct('(') && t.text != kWarpSizeConstant) {
      if (t.text == "_") {
        Advance();
        op.kind = Operand::Kind::kSink;
        return;
      }
      ParseNameOperand(op);
      if (TryPunct('|')) {
        Operand first = std::move(op);
        op = Operand();
        op.kind = Operand::Kind::kPair;
        op.elements.reserve(2);
        op.elements.push_back(std::move(first));
        Operand& second = op.elements.emplace_back();
        if (Peek().text == "_") {
          Advance();
          second.kind = Operand::Kind::kSink;
        } else {
          ParseNameOperand(second);
        }
      }
      return;
    }
    op.kind = Operand::Kind::kImmediate;
    op.expr = ParseExpr();
  }

  void ParseNameOperand(Operand& op) {
    op.name = ExpectIdentifier("operand");
    if (Peek().kind == TokenKind::kDotName) {
      const Token& c = Advance();
      if (c.text.size() != 2 ||
          std::string_view("xyzwrgba").find(c.text[1]) == std::string_view::npos) {
        Fail(c, fmt::format("unknown vector component '{}'", c.text));
      }
      op.component = c.text[1];
    }
    if (Peek().IsPunct('+') || Peek().IsPunct('-')) {
      bool negative = Advance().text == "-";
      const Token& at = Peek();
      auto value = EvaluateConstant(ParseUnary());
      if (!value) Fail(at, "expected a constant offset");
      op.offset = negative ? static_cast<int64_t>(0ULL - static_cast<uint64_t>(*value)) : *value;
    }
  }

  void ParseAddressPart(Operand& op) {
    const Token& t = Peek();
    if (t.kind == TokenKind::kIdentifier) {
      ParseNameOperand(op);
    } else if (t.IsPunct('{')) {
      ParseOperand(op, false);
    } else {
      op.kind = Operand::Kind::kImmediate;
      op.expr = ParseExpr();
    }
  }

  // ---- constant expressions (C precedence, PTX ISA "Constant Expressions") ------------------
  Expr ParseList() {
    NestingGuard guard(*this);
    Expr list;
    list.kind = Expr::Kind::kList;
    ExpectPunct('{');
    if (!Peek().IsPunct('}')) {
      do {
        list.children.push_back(Peek().IsPunct('{') ? ParseList() : ParseExpr());
      } while (TryPunct(','));
    }
    ExpectPunct('}');
    return list;
  }

  static int BinaryPrecedence(const Token& t) {
    return t.kind == TokenKind::kPunct ? internal::BinaryPrecedence(t.text) : -1;
  }

  Expr ParseExpr(int min_precedence = 1) {
    NestingGuard guard(*this);
    Expr lhs = ParseUnary();
    while (true) {
      int p = BinaryPrecedence(Peek());
      if (p < min_precedence) break;
      Expr node;
      node.kind = Expr::Kind::kBinary;
      node.text = std::string(Advance().text);
      Expr rhs = ParseExpr(p + 1);
      node.children.push_back(std::move(lhs));
      node.children.push_back(std::move(rhs));
      lhs = std::move(node);
    }
    return lhs;
  }

  Expr ParseUnary() {
    const Token& t = Peek();
    if (t.IsPunct('-') || t.IsPunct('!') || t.IsPunct('~') || t.IsPunct('+')) {
      NestingGuard guard(*this);
      std::string op(Advance().text);
      Expr operand = ParseUnary();
      if (op == "+") return operand;
      // Fold `-literal` so that printing `-1` and reading it back gives the same tree.
      if (op == "-" && operand.kind == Expr::Kind::kInt && !operand.is_unsigned) {
        operand.int_value = static_cast<int64_t>(0ULL - static_cast<uint64_t>(operand.int_value));
        return operand;
      }
      Expr node;
      node.kind = Expr::Kind::kUnary;
      node.text = std::move(op);
      node.children.push_back(std::move(operand));
      return node;
    }
    return ParsePrimary();
  }

  Expr ParsePrimary() {
    const Token& t = Peek();
    Expr e;
    switch (t.kind) {
      case TokenKind::kInteger: {
        auto value = internal::ParseInteger(t.text);
        if (!value) Fail(t, fmt::format("integer constant out of range: {}", t.text));
        e.int_value = static_cast<int64_t>(value->bits);
        e.is_unsigned = value->is_unsigned;
        Advance();
        return e;
      }
      case TokenKind::kFloat: {
        auto value = internal::ParseFloat(t.text);
        if (!value) Fail(t, fmt::format("malformed floating-point constant: {}", t.text));
        e.kind = Expr::Kind::kFloat;
        e.float_form = value->form;
        e.float_bits = value->bits;
        Advance();
        return e;
      }
      case TokenKind::kIdentifier: {
        e.text = std::string(Advance().text);
        if (TryPunct('(')) {
          e.kind = Expr::Kind::kCall;
          if (!Peek().IsPunct(')')) {
            do {
              e.children.push_back(ParseExpr());
            } while (TryPunct(','));
          }
          ExpectPunct(')');
        } else {
          e.kind = Expr::Kind::kSymbol;
        }
        return e;
      }
      default:
        if (t.IsPunct('(')) {
          Advance();
          e = ParseExpr();
          ExpectPunct(')');
          return e;
        }
        Fail(t, fmt::format("expected an operand, found {}", Describe(t)));
    }
  }

  // Integer value of a constant expression made of literals and arithmetic (for array sizes
  // and address offsets); nullopt when it names symbols or floats.
  static std::optional<int64_t> EvaluateConstant(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kInt:
        return e.int_value;
      case Expr::Kind::kSymbol:
        if (e.text == kWarpSizeConstant) return kWarpSize;
        return std::nullopt;
      case Expr::Kind::kUnary: {
        auto v = EvaluateConstant(e.children[0]);
        if (!v) return std::nullopt;
        uint64_t u = static_cast<uint64_t>(*v);
        if (e.text == "-") return static_cast<int64_t>(0 - u);
        if (e.text == "~") return static_cast<int64_t>(~u);
        return *v == 0 ? 1 : 0;
      }
      case Expr::Kind::kBinary: {
        auto a = EvaluateConstant(e.children[0]);
        auto b = EvaluateConstant(e.children[1]);
        if (!a || !b) return std::nullopt;
        uint64_t x = static_cast<uint64_t>(*a), y = static_cast<uint64_t>(*b);
        const std::string& op = e.text;
        if (op == "+") return static_cast<int64_t>(x + y);
        if (op == "-") return static_cast<int64_t>(x - y);
        if (op == "*") return static_cast<int64_t>(x * y);
        if (op == "<<") return y < 64 ? static_cast<int64_t>(x << y) : 0;
        if (op == "&") return static_cast<int64_t>(x & y);
        if (op == "|") return static_cast<int64_t>(x | y);
        if (op == "^") return static_cast<int64_t>(x ^ y);
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  // Bounds recursion on hostile input (`{{{{...`, `-------1`): each nested construct holds a
  // guard, and the guard's destructor also runs when a syntax error unwinds.
  static constexpr int kMaxNesting = 256;
  class NestingGuard {
   public:
    explicit NestingGuard(Parser& parser) : parser_(parser) {
      if (++parser_.nesting_ > kMaxNesting) {
        --parser_.nesting_;
        parser_.Fail(parser_.Peek(), "constructs nested too deeply");
      }
    }
    ~NestingGuard() { --parser_.nesting_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    Parser& parser_;
  };

  std::string_view source_;
  DiagnosticSink& sink_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

}  // namespace

Module ParseModule(std::string_view source, DiagnosticSink& sink) {
  if (source.size() >= UINT32_MAX) {
    sink.Error({1, 1}, "PTX source larger than 4 GiB");
    return {};
  }
  return Parser(source, sink).Run();
}

absl::StatusOr<Module> ParseModuleOrError(std::string_view source, std::string_view file_name) {
  DiagnosticSink sink;
  Module module = ParseModule(source, sink);
  if (sink.HasErrors()) return absl::InvalidArgumentError(sink.Format(file_name));
  return module;
}

}  // namespace tally::ptx
