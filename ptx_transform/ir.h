// The PTX IR: a plain, editable tree of a PTX module (PTX ISA 6.x-9.x as emitted by nvcc,
// NVRTC and LLVM's NVPTX backend). Passes insert/replace statements, add params, registers and
// labels by editing these structs; the printer turns them back into PTX that ptxas accepts.
//
// Names are not resolved at parse time: PTX lets registers, variables, functions and labels
// share one identifier syntax, so an operand naming any of them is an Operand::Kind::kName.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ptx_transform/box.h"
#include "ptx_transform/diagnostics.h"

namespace tally::ptx {

// PTX ISA, "Identifiers": PTX predefines one constant, WARP_SZ, the warp size (32 on every
// target). An operand that starts with it is a constant expression (`mov.u32 %r1, WARP_SZ;`).
inline constexpr std::string_view kWarpSizeConstant = "WARP_SZ";
inline constexpr int64_t kWarpSize = 32;

// A constant expression: immediates, array sizes, initialisers (`generic(sym)+8`, `{1, 2}`).
struct Expr {
  enum class Kind : uint8_t {
    kInt,     // int_value (two's complement of the literal's 64 bits)
    kFloat,   // float_bits in float_form
    kSymbol,  // text = a variable/function name
    kUnary,   // text = "-", "!" or "~"; children[0]
    kBinary,  // text = operator ("+", "<<", "&&", ...); children[0] op children[1]
    kCall,    // text = "generic" or other built-in; children = arguments
    kList,    // `{a, b, ...}` aggregate initialiser; children = elements
  };
  // How a float literal was written: 0fXXXXXXXX (f32 bits), 0dXXXXXXXXXXXXXXXX (f64 bits) or
  // decimal (stored as f64 bits, printed so that it reads back identically).
  enum class FloatForm : uint8_t { kHexF32, kHexF64, kDecimal };

  Kind kind = Kind::kInt;
  FloatForm float_form = FloatForm::kHexF32;
  bool is_unsigned = false;  // integer literal with a `U` suffix
  int64_t int_value = 0;
  uint64_t float_bits = 0;
  std::string text;
  std::vector<Expr> children;

  static Expr Int(int64_t value) {
    Expr e;
    e.int_value = value;
    return e;
  }
  static Expr Symbol(std::string name) {
    Expr e;
    e.kind = Kind::kSymbol;
    e.text = std::move(name);
    return e;
  }
  friend bool operator==(const Expr&, const Expr&) = default;
};

struct Operand {
  enum class Kind : uint8_t {
    kName,       // register, special register, variable, function or label: `name[.component]`
    kImmediate,  // `expr`
    kVector,     // `{a, b, _, d}`: elements
    kAddress,    // `[base+offset]`: elements[0] is the base (kName, or kImmediate for an
                 // absolute address); more elements for texture/surface forms `[tex, {x, y}]`
    kParenList,  // `(a, b)`: return and argument lists of `call`
    kPair,       // `a|b`: the two destinations of setp/shfl; elements
    kSink,       // `_`
  };

  // Operands are the most numerous IR objects, so they stay small: the (rare) constant
  // expression is boxed and the vector component is one letter.
  Kind kind = Kind::kName;
  bool negated = false;  // `!name` (predicate negation)
  char component = 0;  // kName: 'x' for `%tid.x`; x y z w / r g b a (PTX ISA "Vectors"); 0 if none
  int64_t offset = 0;  // kName inside an address: `[name+offset]`
  std::string name;    // kName
  Box<Expr> expr;      // kImmediate (always set for it)
  std::vector<Operand> elements;

  static Operand Name(std::string n, char component = 0) {
    Operand o;
    o.name = std::move(n);
    o.component = component;
    return o;
  }
  static Operand Imm(int64_t value) {
    Operand o;
    o.kind = Kind::kImmediate;
    o.expr = Expr::Int(value);
    return o;
  }
  static Operand Address(std::string base, int64_t offset = 0) {
    Operand inner = Name(std::move(base));
    inner.offset = offset;
    Operand o;
    o.kind = Kind::kAddress;
    o.elements.push_back(std::move(inner));
    return o;
  }
  friend bool operator==(const Operand&, const Operand&) = default;
};

// `[@[!]guard] opcode.mod1.mod2 operand, ...;`
struct Instruction {
  SourceLocation location;
  std::string guard;  // predicate register; empty when unguarded
  bool guard_negated = false;
  std::string opcode;                  // `ld`
  std::vector<std::string> modifiers;  // `global`, `v4`, `f32`, `L2::128B` (without the dot)
  std::vector<Operand> operands;

  bool HasModifier(std::string_view modifier) const {
    for (const auto& m : modifiers)
      if (m == modifier) return true;
    return false;
  }
  friend bool operator==(const Instruction&, const Instruction&) = default;
};

struct Label {
  SourceLocation location;
  std::string name;
  friend bool operator==(const Label&, const Label&) = default;
};

// `.reg .b32 %r<6>, %x;`: each entry declares `name` or, with count, `name0` .. `name{count-1}`.
struct RegDecl {
  SourceLocation location;
  std::string type;           // `b32`, `pred`, `f16x2` (without the dot)
  uint32_t vector_width = 0;  // 0, 2, 4 or 8 for `.v2`/`.v4`/`.v8`
  struct Entry {
    std::string name;
    std::optional<uint32_t> count;  // `%r<6>` -> 6
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  std::vector<Entry> entries;
  friend bool operator==(const RegDecl&, const RegDecl&) = default;
};

// A variable in a state space (module scope or function scope), or a parameter of an
// `.entry`/`.func` (state_space == "param").
struct VarDecl {
  SourceLocation location;
  std::string linkage;                  // "", `visible`, `extern`, `weak`, `common`
  std::string state_space;              // `global`, `shared`, `const`, `local`, `param`, `tex`, ...
  std::vector<std::string> attributes;  // `.attribute(.managed)` -> `managed`
  std::optional<uint64_t> align;
  uint32_t vector_width = 0;
  std::string type;  // `b8`, `u32`, `f64`, `texref`, ...
  // `.ptr [.space] [.align N]` on kernel parameters.
  bool is_ptr = false;
  std::string ptr_space;
  std::optional<uint64_t> ptr_align;
  std::string name;
  // One entry per `[N]`; nullopt for `[]` (extern shared arrays, unsized initialised arrays).
  std::vector<std::optional<uint64_t>> dims;
  std::optional<Expr> initializer;

  friend bool operator==(const VarDecl&, const VarDecl&) = default;
};

// A directive kept as written: `.loc 1 23 5`, `.pragma "nounroll"`, `.maxntid 256, 1, 1`,
// `.file 1 "a.cu"`, `.section .debug_info { ... }`, `.callprototype ...`, `.branchtargets ...`.
// `args` is the normalised text after the name, without the terminating `;`.
struct Directive {
  SourceLocation location;
  std::string name;  // without the dot
  std::string args;
  bool has_semicolon = false;
  friend bool operator==(const Directive&, const Directive&) = default;
};

struct Statement;

// `{ ... }`: a nested scope (inline PTX, call sequences).
struct Block {
  SourceLocation location;
  std::vector<Statement> statements;
  friend bool operator==(const Block&, const Block&) = default;
};

// A variable declared in a body is boxed: VarDecl is large and rare there, while every
// instruction is a Statement.
struct Statement {
  std::variant<Instruction, Label, RegDecl, Box<VarDecl>, Directive, Block> value;
  friend bool operator==(const Statement&, const Statement&) = default;
};

struct Function {
  SourceLocation location;
  std::string linkage;  // "", `visible`, `extern`, `weak`
  bool is_entry = false;
  bool has_return_list = false;  // `.func (.param .b32 r) f(...)`
  std::vector<VarDecl> returns;
  bool has_param_list = true;
  std::vector<VarDecl> params;
  std::vector<Directive> performance_directives;  // `.maxntid`, `.reqntid`, `.noreturn`, ...
  std::optional<Block> body;                      // absent for a prototype `...;`
  std::string name;
  friend bool operator==(const Function&, const Function&) = default;
};

struct TopLevel {
  std::variant<Function, VarDecl, Directive> value;
  friend bool operator==(const TopLevel&, const TopLevel&) = default;
};

struct Module {
  uint32_t version_major = 0;
  uint32_t version_minor = 0;
  std::vector<std::string> targets;  // `sm_80`, `texmode_independent`, `debug`
  uint32_t address_size = 64;
  bool has_address_size = false;
  std::vector<TopLevel> items;

  // Lookup by name, preferring the definition over prototypes (nullptr when absent).
  // Linear: modules hold few functions.
  Function* FindFunction(std::string_view name);
  const Function* FindFunction(std::string_view name) const;
  friend bool operator==(const Module&, const Module&) = default;
};

}  // namespace tally::ptx
