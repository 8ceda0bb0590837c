// IR -> PTX text, laid out like nvcc's output (tab-indented body, one statement per line).
// Appends to one string throughout to keep printing allocation-light.
#include "ptx_transform/printer.h"

#include <charconv>
#include <cstring>

#include "ptx_transform/internal/operators.h"

namespace tally::ptx {
namespace {

void AppendInt(std::string& out, int64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

void AppendUnsigned(std::string& out, uint64_t value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

void AppendHex(std::string& out, uint64_t value, int digits) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  for (int i = digits - 1; i >= 0; --i) out.push_back(kDigits[(value >> (4 * i)) & 15]);
}

// `parent_precedence`: the loosest binding the context allows without parentheses.
void AppendExpr(std::string& out, const Expr& e, int parent_precedence = 0) {
  switch (e.kind) {
    case Expr::Kind::kInt:
      if (e.is_unsigned) {
        AppendUnsigned(out, static_cast<uint64_t>(e.int_value));
        out.push_back('U');
      } else {
        AppendInt(out, e.int_value);
      }
      return;
    case Expr::Kind::kFloat:
      if (e.float_form == Expr::FloatForm::kHexF32) {
        out += "0f";
        AppendHex(out, e.float_bits, 8);
      } else if (e.float_form == Expr::FloatForm::kHexF64) {
        out += "0d";
        AppendHex(out, e.float_bits, 16);
      } else {
        double value;
        std::memcpy(&value, &e.float_bits, sizeof value);
        char buf[40];
        auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest round-trip
        std::string_view text(buf, end - buf);
        out += text;
        if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
      }
      return;
    case Expr::Kind::kSymbol:
      out += e.text;
      return;
    case Expr::Kind::kUnary: {
      out += e.text;
      const Expr& operand = e.children[0];
      bool parens = operand.kind == Expr::Kind::kUnary || operand.kind == Expr::Kind::kBinary;
      if (parens) out.push_back('(');
      AppendExpr(out, operand);
      if (parens) out.push_back(')');
      return;
    }
    case Expr::Kind::kBinary: {
      int p = internal::BinaryPrecedence(e.text);
      bool parens = p < parent_precedence;
      if (parens) out.push_back('(');
      AppendExpr(out, e.children[0], p);
      out += e.text;
      AppendExpr(out, e.children[1], p + 1);  // left-associative
      if (parens) out.push_back(')');
      return;
    }
    case Expr::Kind::kCall:
    case Expr::Kind::kList: {
      bool is_call = e.kind == Expr::Kind::kCall;
      if (is_call) out += e.text;
      out.push_back(is_call ? '(' : '{');
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i) out += ", ";
        AppendExpr(out, e.children[i]);
      }
      out.push_back(is_call ? ')' : '}');
      return;
    }
  }
}

void AppendOperand(std::string& out, const Operand& op, bool in_address = false);

void AppendOperandList(std::string& out, const std::vector<Operand>& elements,
                       bool in_address = false) {
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i) out += ", ";
    AppendOperand(out, elements[i], in_address);
  }
}

// An expression operand printed as `sym...` would read back as a name operand (`sym+4` as a
// register with an offset), and inside `[...]` so would `f(...)`: such expressions keep the
// parentheses they must have been written with, so that printing round-trips. WARP_SZ reads
// back as the constant it is, so it prints as written.
bool NeedsParentheses(const Expr& e, bool in_address) {
  const Expr* leftmost = &e;
  while (leftmost->kind == Expr::Kind::kBinary) leftmost = &leftmost->children[0];
  return (leftmost->kind == Expr::Kind::kSymbol && leftmost->text != kWarpSizeConstant) ||
         (in_address && leftmost->kind == Expr::Kind::kCall);
}

void AppendOperand(std::string& out, const Operand& op, bool in_address) {
  switch (op.kind) {
    case Operand::Kind::kName:
      if (op.negated) out.push_back('!');
      out += op.name;
      if (op.component != 0) {
        out.push_back('.');
        out.push_back(op.component);
      }
      if (op.offset != 0) {
        out.push_back('+');  // `[%rd1+-8]`: the form LLVM emits and ptxas accepts
        AppendInt(out, op.offset);
      }
      return;
    case Operand::Kind::kImmediate: {
      bool parens = NeedsParentheses(*op.expr, in_address);
      if (parens) out.push_back('(');
      AppendExpr(out, *op.expr);
      if (parens) out.push_back(')');
      return;
    }
    case Operand::Kind::kVector:
      out.push_back('{');
      AppendOperandList(out, op.elements);
      out.push_back('}');
      return;
    case Operand::Kind::kAddress:
      out.push_back('[');
      AppendOperandList(out, op.elements, /*in_address=*/true);
      out.push_back(']');
      return;
    case Operand::Kind::kParenList:
      out.push_back('(');
      AppendOperandList(out, op.elements);
      out.push_back(')');
      return;
    case Operand::Kind::kPair:
      for (size_t i = 0; i < op.elements.size(); ++i) {
        if (i) out.push_back('|');
        AppendOperand(out, op.elements[i]);
      }
      return;
    case Operand::Kind::kSink:
      out.push_back('_');
      return;
  }
}

void AppendInstruction(std::string& out, const Instruction& inst) {
  if (!inst.guard.empty()) {
    out.push_back('@');
    if (inst.guard_negated) out.push_back('!');
    out += inst.guard;
    out.push_back(' ');
  }
  out += inst.opcode;
  for (const auto& m : inst.modifiers) {
    out.push_back('.');
    out += m;
  }
  if (!inst.operands.empty()) {
    out.push_back('\t');
    AppendOperandList(out, inst.operands);
  }
  out.push_back(';');
}

void AppendDirective(std::string& out, const Directive& d) {
  out.push_back('.');
  out += d.name;
  if (!d.args.empty()) {
    out.push_back(' ');
    out += d.args;
  }
  if (d.has_semicolon) out.push_back(';');
}

void AppendDecl(std::string& out, const VarDecl& v) {
  if (!v.linkage.empty()) {
    out.push_back('.');
    out += v.linkage;
    out.push_back(' ');
  }
  out.push_back('.');
  out += v.state_space;
  for (const auto& a : v.attributes) {
    out += " .attribute(.";
    out += a;
    out.push_back(')');
  }
  if (v.align) {
    out += " .align ";
    AppendUnsigned(out, *v.align);
  }
  if (v.vector_width) {
    out += " .v";
    AppendUnsigned(out, v.vector_width);
  }
  out += " .";
  out += v.type;
  if (v.is_ptr) {
    out += " .ptr";
    if (!v.ptr_space.empty()) {
      out += " .";
      out += v.ptr_space;
    }
    if (v.ptr_align) {
      out += " .align ";
      AppendUnsigned(out, *v.ptr_align);
    }
  }
  out.push_back(' ');
  out += v.name;
  for (const auto& dim : v.dims) {
    out.push_back('[');
    if (dim) AppendUnsigned(out, *dim);
    out.push_back(']');
  }
  if (v.initializer) {
    out += " = ";
    AppendExpr(out, *v.initializer);
  }
}

void AppendRegDecl(std::string& out, const RegDecl& r) {
  out += ".reg";
  if (r.vector_width) {
    out += " .v";
    AppendUnsigned(out, r.vector_width);
  }
  out += " .";
  out += r.type;
  out.push_back(' ');
  for (size_t i = 0; i < r.entries.size(); ++i) {
    if (i) out += ", ";
    out += r.entries[i].name;
    if (r.entries[i].count) {
      out.push_back('<');
      AppendUnsigned(out, *r.entries[i].count);
      out.push_back('>');
    }
  }
  out.push_back(';');
}

void AppendIndent(std::string& out, int depth) { out.append(static_cast<size_t>(depth), '\t'); }

void AppendBlock(std::string& out, const Block& block, int depth);

void AppendStatement(std::string& out, const Statement& s, int depth) {
  if (const auto* label = std::get_if<Label>(&s.value)) {
    out += label->name;
    out += ":\n";
    return;
  }
  AppendIndent(out, depth);
  if (const auto* inst = std::get_if<Instruction>(&s.value)) {
    AppendInstruction(out, *inst);
  } else if (const auto* reg = std::get_if<RegDecl>(&s.value)) {
    AppendRegDecl(out, *reg);
  } else if (const auto* var = std::get_if<Box<VarDecl>>(&s.value)) {
    AppendDecl(out, **var);
    out.push_back(';');
  } else if (const auto* dir = std::get_if<Directive>(&s.value)) {
    AppendDirective(out, *dir);
  } else {
    AppendBlock(out, std::get<Block>(s.value), depth);
  }
  out.push_back('\n');
}

// `{`, the statements one level deeper, and `}` at `depth` (the caller indented the `{`).
void AppendBlock(std::string& out, const Block& block, int depth) {
  out += "{\n";
  for (const auto& s : block.statements) AppendStatement(out, s, depth + 1);
  AppendIndent(out, depth);
  out.push_back('}');
}

void AppendParamList(std::string& out, const std::vector<VarDecl>& params) {
  out.push_back('(');
  for (size_t i = 0; i < params.size(); ++i) {
    out += i ? ",\n\t" : "\n\t";
    AppendDecl(out, params[i]);
  }
  if (!params.empty()) out.push_back('\n');
  out.push_back(')');
}

void AppendFunction(std::string& out, const Function& f) {
  if (!f.linkage.empty()) {
    out.push_back('.');
    out += f.linkage;
    out.push_back(' ');
  }
  out += f.is_entry ? ".entry " : ".func ";
  if (f.has_return_list) {
    AppendParamList(out, f.returns);
    out.push_back(' ');
  }
  out += f.name;
  if (f.has_param_list) AppendParamList(out, f.params);
  for (const auto& d : f.performance_directives) {
    out.push_back('\n');
    AppendDirective(out, d);
  }
  if (!f.body) {
    out += ";\n";
    return;
  }
  out.push_back('\n');
  AppendBlock(out, *f.body, 0);
  out.push_back('\n');
}

}  // namespace

void PrintModule(const Module& module, std::string& out) {
  out += "//\n// Printed by tally-ptx\n//\n\n.version ";
  AppendUnsigned(out, module.version_major);
  out.push_back('.');
  AppendUnsigned(out, module.version_minor);
  out += "\n.target ";
  for (size_t i = 0; i < module.targets.size(); ++i) {
    if (i) out += ", ";
    out += module.targets[i];
  }
  if (module.has_address_size) {
    out += "\n.address_size ";
    AppendUnsigned(out, module.address_size);
  }
  out += "\n\n";
  for (const auto& item : module.items) {
    if (const auto* f = std::get_if<Function>(&item.value)) {
      AppendFunction(out, *f);
    } else if (const auto* v = std::get_if<VarDecl>(&item.value)) {
      AppendDecl(out, *v);
      out.push_back(';');
    } else {
      AppendDirective(out, std::get<Directive>(item.value));
    }
    out.push_back('\n');
  }
}

std::string PrintModule(const Module& module) {
  std::string out;
  PrintModule(module, out);
  return out;
}

std::string PrintInstruction(const Instruction& instruction) {
  std::string out;
  AppendInstruction(out, instruction);
  return out;
}

std::string PrintOperand(const Operand& operand) {
  std::string out;
  AppendOperand(out, operand);
  return out;
}

std::string PrintExpr(const Expr& expr) {
  std::string out;
  AppendExpr(out, expr);
  return out;
}

}  // namespace tally::ptx
