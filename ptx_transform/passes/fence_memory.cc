// Memory fencing: the checks before every global access, the fence registers and the fenced
// clones of called functions (see fence_memory.h).
#include "ptx_transform/passes/fence_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>

#include "ptx_transform/kernel_signature.h"
#include "ptx_transform/passes/passes.h"

namespace tally::ptx::passes {
namespace {

// cuLaunchKernel's parameter limit for every target the corpus has (PTX ISA "Kernel Function
// Parameters": 4 KiB before PTX 8.1 / sm_70 with CUDA 12.1). The fenced kernel's variants add
// up to 24 more bytes after the fence.
constexpr uint64_t kParamLimit = 4096;
constexpr uint64_t kVariantExtraBytes = 24;

// The state space an instruction's modifiers name for its address.
enum class Space { kGlobal, kGeneric, kOther };

Space AccessSpace(const Instruction& inst) {
  for (const std::string& m : inst.modifiers) {
    if (m == "global") return Space::kGlobal;
    if (m == "shared" || m.starts_with("shared::") || m == "local" || m == "const" ||
        m == "param" || m.starts_with("param::")) {
      return Space::kOther;
    }
  }
  return Space::kGeneric;
}

std::string Spelling(const Instruction& inst) {
  std::string s = inst.opcode;
  for (const std::string& m : inst.modifiers) s += "." + m;
  return s;
}

}  // namespace

// Register and variable names of one function (its body and nested blocks).
class FunctionNames {
 public:
  explicit FunctionNames(const Function& f) {
    for (const VarDecl& p : f.params) variables_[p.name] = p.state_space;
    if (f.body) Collect(f.body->statements);
  }
  // The declared type of register `name` (`b64`, ...); empty when it is no register.
  std::string RegisterType(const std::string& name) const {
    if (auto it = registers_.find(name); it != registers_.end()) return it->second;
    size_t digits = name.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
    if (digits == name.size() || digits == 0) return "";
    auto it = ranges_.find(name.substr(0, digits));
    if (it == ranges_.end()) return "";
    const std::string index = name.substr(digits);
    if (index.size() > 9 || (index.size() > 1 && index[0] == '0')) return "";
    return std::stoul(index) < it->second.second ? it->second.first : "";
  }
  const std::string* VariableSpace(const std::string& name) const {
    auto it = variables_.find(name);
    return it == variables_.end() ? nullptr : &it->second;
  }

 private:
  // A name declared twice with different types (in different scopes) reads as "conflict".
  static void Add(std::map<std::string, std::string>& map, const std::string& name,
                  const std::string& type) {
    auto [it, inserted] = map.emplace(name, type);
    if (!inserted && it->second != type) it->second = "conflict";
  }
  void Collect(const std::vector<Statement>& statements) {
    for (const Statement& s : statements) {
      if (const auto* reg = std::get_if<RegDecl>(&s.value)) {
        std::string type = reg->vector_width != 0 ? "vector" : reg->type;
        for (const auto& entry : reg->entries) {
          if (!entry.count) {
            Add(registers_, entry.name, type);
            continue;
          }
          auto [it, inserted] = ranges_.emplace(entry.name, std::pair{type, *entry.count});
          if (!inserted && it->second.first != type) it->second.first = "conflict";
          it->second.second = std::max(it->second.second, *entry.count);
        }
      } else if (const auto* var = std::get_if<Box<VarDecl>>(&s.value)) {
        Add(variables_, (*var)->name, (*var)->state_space);
      } else if (const auto* block = std::get_if<Block>(&s.value)) {
        Collect(block->statements);
      }
    }
  }
  std::map<std::string, std::string> registers_;
  std::map<std::string, std::pair<std::string, uint32_t>> ranges_;  // `%r<6>`: type, count
  std::map<std::string, std::string> variables_;                    // name -> state space
};

namespace {

// What the fence does with one instruction.
struct Access {
  enum class Check { kNone, kData, kHint };
  Check check = Check::kNone;
  size_t operand = 0;    // the address operand checked
  bool generic = false;  // isspacep.global decides whether the check applies
  std::string refusal;   // non-empty: the instruction cannot be fenced
};

bool IsOneOf(std::string_view opcode, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), opcode) != names.end();
}

// How `inst` of a function reaches memory. Conservative: an instruction with an address operand
// that is not known to stay in shared, local, const or param memory, and is not one of the
// accesses below, is refused.
Access Classify(const Instruction& inst, const FunctionNames& names,
                const std::map<std::string, std::string, std::less<>>& module_variables) {
  Access access;
  auto refuse = [&](std::string why) {
    access.refusal = std::move(why);
    return access;
  };
  const std::string& op = inst.opcode;
  if (IsOneOf(op, {"tex", "tld4", "suld", "sust", "sured"})) {
    return refuse(fmt::format("texture/surface instruction {} (memory reached through a handle)",
                              Spelling(inst)));
  }
  if (op == "multimem") return refuse(fmt::format("multimem access {}", Spelling(inst)));
  if (op == "tensormap" || op == "tcgen05" || inst.HasModifier("tensormap")) {
    return refuse(fmt::format("tensor map or tensor memory operation {}", Spelling(inst)));
  }
  if (op == "cp" &&
      (inst.HasModifier("bulk") || inst.HasModifier("reduce") || inst.HasModifier("tensor"))) {
    return refuse(fmt::format("bulk or tensor copy {}", Spelling(inst)));
  }
  // txq/suq query a texture or surface's attributes: no memory.
  if (IsOneOf(op, {"txq", "suq", "call"})) return access;
  size_t index = 0;
  while (index < inst.operands.size() && inst.operands[index].kind != Operand::Kind::kAddress) {
    ++index;
  }
  if (index == inst.operands.size()) return access;  // no memory operand
  const Space space = AccessSpace(inst);
  if (op == "cp" && inst.HasModifier("async") && !inst.HasModifier("mbarrier")) {
    // cp.async.{ca,cg}.shared{::cta}.global [dst], [src], size...: the source is global.
    if (index + 1 >= inst.operands.size() ||
        inst.operands[index + 1].kind != Operand::Kind::kAddress) {
      return refuse(fmt::format("{} without a global source address", Spelling(inst)));
    }
    access.check = Access::Check::kData;
    access.operand = index + 1;
  } else if (space == Space::kOther) {
    return access;  // shared, local, const or param memory: not another client's
  } else if (IsOneOf(op, {"ld", "ldu", "st", "atom", "red", "discard", "mbarrier"}) || op == "cp") {
    // cp.async.mbarrier.arrive and mbarrier.* on a generic address: an access of 8 bytes.
    access.check = Access::Check::kData;
    access.operand = index;
    access.generic = space == Space::kGeneric;
  } else if (IsOneOf(op, {"prefetch", "prefetchu", "applypriority"})) {
    // Cache hints: they neither return data nor change memory, but the PTX ISA does not say
    // that they cannot fault on an unmapped address, so they are redirected like accesses;
    // without setting the flag, since prefetching past a buffer's end is legitimate.
    access.check = Access::Check::kHint;
    access.operand = index;
    access.generic = space == Space::kGeneric;
  } else {
    // wmma.load/store (a strided tile, not one address), generic ldmatrix, fence.proxy with an
    // address, and whatever a later PTX adds.
    return refuse(fmt::format("{} reaches memory through an address the fence does not check",
                              Spelling(inst)));
  }
  const Operand& address = inst.operands[access.operand];
  if (address.elements.size() != 1) {
    return refuse(fmt::format("{} with a compound address", Spelling(inst)));
  }
  const Operand& base = address.elements[0];
  if (base.kind == Operand::Kind::kImmediate) return access;
  if (base.kind != Operand::Kind::kName || base.negated) {
    return refuse(fmt::format("{} with an unexpected address operand", Spelling(inst)));
  }
  const std::string type = names.RegisterType(base.name);
  if (!type.empty()) {
    if (type == "b64" || type == "u64" || type == "s64") return access;
    return refuse(fmt::format("{} through register {} of type .{}, not a 64-bit address",
                              Spelling(inst), base.name, type));
  }
  const std::string* var_space = names.VariableSpace(base.name);
  if (var_space == nullptr) {
    auto it = module_variables.find(base.name);
    if (it != module_variables.end()) var_space = &it->second;
  }
  if (var_space == nullptr) {
    return refuse(
        fmt::format("{} through {}, neither a register nor a variable", Spelling(inst), base.name));
  }
  if (access.generic) {
    // A variable's address says its space: only a global one needs the check.
    if (*var_space != "global") access.check = Access::Check::kNone;
    access.generic = false;
  }
  return access;
}

Operand Negated(Operand op, bool negated) {
  op.negated = negated;
  return op;
}

}  // namespace

// The fence values and scratch registers of one function.
struct MemoryFencer::Registers {
  std::string base[3], size[3], flag;  // b64
  std::string address, difference;     // b64 scratch
  std::string one;                     // b32 holding 1, the value stored to the flag
  std::string bad, global;             // pred scratch
  std::string param;                   // pred scratch, when generic param addresses exist
};

MemoryFencer::MemoryFencer(Module& module, NameAllocator& names)
    : module_(module),
      clones_(module, names, "__tally_fence"),
      functions_(clones_.functions()),
      names_(names) {
  for (const TopLevel& item : module.items) {
    if (const auto* var = std::get_if<VarDecl>(&item.value)) {
      module_variables_[var->name] = var->state_space;
    }
    const auto* f = std::get_if<Function>(&item.value);
    if (f == nullptr || !f->body) continue;
    ForEachInstruction(f->body->statements, [&](const Instruction& inst) {
      if (inst.opcode != "cvta") return;
      for (const std::string& m : inst.modifiers) {
        if (m.starts_with("param")) generic_params_ = true;
      }
    });
  }
}

const MemoryFencer::OwnFacts& MemoryFencer::FactsOf(const Function& function) {
  if (auto it = facts_.find(function.name); it != facts_.end()) return it->second;
  OwnFacts facts;
  const std::string where =
      function.is_entry ? "" : fmt::format(" in called function {}", function.name);
  auto add = [&](const std::string& reason) {
    if (std::find(facts.reasons.begin(), facts.reasons.end(), reason) == facts.reasons.end()) {
      facts.reasons.push_back(reason);
    }
  };
  FunctionNames names(function);
  ForEachInstruction(function.body->statements, [&](const Instruction& inst) {
    if (inst.opcode == "call") {
      const Operand* target = CallTarget(inst);
      const Function* callee = target != nullptr ? functions_.Find(target->name) : nullptr;
      if (callee == nullptr) {
        add("indirect call (its callee cannot be fenced)" + where);
      } else if (callee->body) {
        facts.callees.push_back(callee);
      } else if (callee->name != "vprintf") {
        // vprintf's argument buffer is local memory; the device heap of malloc/free lies
        // outside the client's ranges, and other external functions are unknown.
        add(fmt::format("calls external function {} (outside the module: cannot be fenced){}",
                        callee->name, where));
      }
      return;
    }
    ForEachOperand(inst, [&](const Operand& op) {
      // %envreg1/2 hold the driver's grid-wide synchronisation workspace (cooperative launch),
      // which lies outside the client's ranges.
      if (op.kind == Operand::Kind::kName && op.name.starts_with("%envreg")) {
        add("reads " + op.name + " (driver memory such as the grid-sync workspace)" + where);
      }
    });
    Access access = Classify(inst, names, module_variables_);
    if (!access.refusal.empty()) add(access.refusal + where);
  });
  return facts_.emplace(function.name, std::move(facts)).first->second;
}

void MemoryFencer::CollectRefusals(const Function& function, std::vector<std::string>& reasons,
                                   std::set<std::string>& visited) {
  if (!visited.insert(function.name).second) return;  // recursion and shared callees: once
  const OwnFacts& facts = FactsOf(function);
  for (const std::string& reason : facts.reasons) {
    if (std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) {
      reasons.push_back(reason);
    }
  }
  for (const Function* callee : facts.callees) CollectRefusals(*callee, reasons, visited);
}

std::string MemoryFencer::Refusal(const Function& kernel) {
  std::vector<std::string> reasons;
  if (module_.address_size != 64) reasons.push_back("32-bit addressing (.address_size 32)");
  auto signature = ComputeSignature(kernel);
  if (!signature.ok()) {
    reasons.push_back("parameters: " + std::string(signature.status().message()));
  } else if ((signature->param_buffer_size + 7) / 8 * 8 + kFenceParamBytes + kVariantExtraBytes >
             kParamLimit) {
    reasons.push_back("parameters leave no room for the fence parameter (4 KiB limit)");
  }
  std::set<std::string> visited;
  CollectRefusals(kernel, reasons, visited);
  std::string out;
  for (const std::string& r : reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

void MemoryFencer::Fence(Function& kernel) {
  NameAllocator local_names(names_, kernel);
  std::string param = local_names.Fresh("__tally_fence");
  FenceFunction(kernel, param, local_names);
}

void MemoryFencer::FenceFunction(Function& function, const std::string& param,
                                 NameAllocator& local_names) {
  VarDecl decl = Param("b8", param);
  decl.align = 8;
  decl.dims.push_back(kFenceParamBytes);
  function.params.push_back(std::move(decl));

  Registers regs;
  std::vector<std::string> b64;
  for (int i = 0; i < 3; ++i) {
    regs.base[i] = local_names.Fresh(fmt::format("%__tally_fence_base{}", i));
    regs.size[i] = local_names.Fresh(fmt::format("%__tally_fence_size{}", i));
    b64.push_back(regs.base[i]);
    b64.push_back(regs.size[i]);
  }
  regs.flag = local_names.Fresh("%__tally_fence_flag");
  regs.address = local_names.Fresh("%__tally_fence_address");
  regs.difference = local_names.Fresh("%__tally_fence_difference");
  regs.one = local_names.Fresh("%__tally_fence_one");
  regs.bad = local_names.Fresh("%__tally_fence_bad");
  regs.global = local_names.Fresh("%__tally_fence_global");
  if (generic_params_) regs.param = local_names.Fresh("%__tally_fence_param");
  b64.insert(b64.end(), {regs.flag, regs.address, regs.difference});

  std::vector<Statement> prologue;
  prologue.push_back(DeclareRegisters("b64", std::move(b64)));
  prologue.push_back(DeclareRegisters("b32", {regs.one}));
  prologue.push_back(DeclareRegisters("pred", generic_params_
                                                  ? std::vector{regs.bad, regs.global, regs.param}
                                                  : std::vector{regs.bad, regs.global}));
  // FenceParams: base[3] at 0, size[3] at 24, violation_flag at 48.
  for (int i = 0; i < 3; ++i) {
    prologue.push_back(Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.base[i]), Addr(param, 8 * i)})));
    prologue.push_back(
        Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.size[i]), Addr(param, 24 + 8 * i)})));
  }
  prologue.push_back(Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.flag), Addr(param, 48)})));
  prologue.push_back(Stmt(Inst("mov", {"u32"}, {Reg(regs.one), Imm(1)})));

  const FunctionNames names(function);
  auto& body = function.body->statements;
  FenceStatements(body, regs, names, local_names);
  body.insert(body.begin() + static_cast<std::ptrdiff_t>(FirstExecutableIndex(body)),
              std::make_move_iterator(prologue.begin()), std::make_move_iterator(prologue.end()));
}

void MemoryFencer::FenceStatements(std::vector<Statement>& statements, const Registers& regs,
                                   const FunctionNames& names, NameAllocator& local_names) {
  std::vector<Statement> out;
  out.reserve(statements.size());
  for (Statement& statement : statements) {
    if (auto* block = std::get_if<Block>(&statement.value)) {
      FenceStatements(block->statements, regs, names, local_names);
      out.push_back(std::move(statement));
      continue;
    }
    auto* inst = std::get_if<Instruction>(&statement.value);
    if (inst == nullptr) {
      out.push_back(std::move(statement));
      continue;
    }
    if (inst->opcode == "call") {
      size_t target_index = CallTargetIndex(*inst);
      const Function* callee = target_index < inst->operands.size()
                                   ? functions_.Find(inst->operands[target_index].name)
                                   : nullptr;
      if (callee == nullptr || !callee->body) {  // vprintf (Refusal vetted the rest)
        out.push_back(std::move(statement));
        continue;
      }
      // `{ .param .align 8 .b8 a[56]; st.param.b64 [a+0], %base0; ...; call f, (args..., a); }`
      inst->operands[target_index].name = CloneOf(inst->operands[target_index].name);
      Operand& args = CallArgumentList(*inst, target_index);
      std::string arg = local_names.Fresh("__tally_fence_arg");
      VarDecl decl = Param("b8", arg);
      decl.align = 8;
      decl.dims.push_back(kFenceParamBytes);
      Block sequence;
      sequence.statements.push_back({Box<VarDecl>(std::move(decl))});
      const std::string* values[7] = {&regs.base[0], &regs.base[1], &regs.base[2], &regs.size[0],
                                      &regs.size[1], &regs.size[2], &regs.flag};
      for (int i = 0; i < 7; ++i) {
        sequence.statements.push_back(
            Stmt(Inst("st", {"param", "b64"}, {Addr(arg, 8 * i), Reg(*values[i])})));
      }
      args.elements.push_back(Reg(arg));
      sequence.statements.push_back(std::move(statement));
      out.push_back({std::move(sequence)});
      continue;
    }
    Access access = Classify(*inst, names, module_variables_);
    if (access.check == Access::Check::kNone) {
      out.push_back(std::move(statement));
      continue;
    }
    // The start address into `address` (or read from the base register as it is).
    Operand& operand = inst->operands[access.operand];
    const Operand& base = operand.elements[0];
    std::string address = regs.address;
    if (base.kind == Operand::Kind::kImmediate) {
      out.push_back(Stmt(Inst("mov", {"u64"}, {Reg(address), base})));
    } else if (!names.RegisterType(base.name).empty()) {
      if (base.offset == 0) {
        address = base.name;
      } else {
        out.push_back(
            Stmt(Inst("add", {"s64"}, {Reg(regs.address), Reg(base.name), Imm(base.offset)})));
      }
    } else {
      out.push_back(Stmt(Inst("mov", {"u64"}, {Reg(address), Reg(base.name)})));
      if (base.offset != 0) {
        out.push_back(Stmt(Inst("add", {"s64"}, {Reg(address), Reg(address), Imm(base.offset)})));
      }
    }
    // bad = the access executes (its guard holds) and the address is global and in no range.
    // The first comparison takes the guard (or, unguarded, the global test) as its third input;
    // a guarded generic access ANDs the global test in at the end.
    if (access.generic) {
      out.push_back(Stmt(Inst("isspacep", {"global"}, {Reg(regs.global), Reg(address)})));
      if (generic_params_) {
        // The PTX ISA ("isspacep") puts the kernel parameter window inside the global one:
        // generic addresses of parameters (cvta.param, __grid_constant__) pass unchecked.
        out.push_back(Stmt(Inst("isspacep", {"param"}, {Reg(regs.param), Reg(address)})));
        out.push_back(Stmt(Inst("not", {"pred"}, {Reg(regs.param), Reg(regs.param)})));
        out.push_back(
            Stmt(Inst("and", {"pred"}, {Reg(regs.global), Reg(regs.global), Reg(regs.param)})));
      }
    }
    for (int i = 0; i < 3; ++i) {
      out.push_back(
          Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(address), Reg(regs.base[i])})));
      std::vector<Operand> operands = {Reg(regs.bad), Reg(regs.difference), Reg(regs.size[i])};
      if (i > 0) {
        operands.push_back(Reg(regs.bad));
      } else if (!inst->guard.empty()) {
        operands.push_back(Negated(Reg(inst->guard), inst->guard_negated));
      } else if (access.generic) {
        operands.push_back(Reg(regs.global));
      }
      out.push_back(operands.size() == 4 ? Stmt(Inst("setp", {"ge", "and", "u64"}, operands))
                                         : Stmt(Inst("setp", {"ge", "u64"}, operands)));
    }
    if (access.generic && !inst->guard.empty()) {
      out.push_back(Stmt(Inst("and", {"pred"}, {Reg(regs.bad), Reg(regs.bad), Reg(regs.global)})));
    }
    out.push_back(Stmt(Inst("selp", {"b64"},
                            {Reg(regs.address), Reg(regs.base[0]), Reg(address), Reg(regs.bad)})));
    if (access.check == Access::Check::kData) {
      out.push_back(
          Stmt(Guard(Inst("st", {"global", "u32"}, {Addr(regs.flag), Reg(regs.one)}), regs.bad)));
    }
    operand.elements[0] = Reg(regs.address);
    out.push_back(std::move(statement));
  }
  statements = std::move(out);
}

const std::string& MemoryFencer::CloneOf(const std::string& function) {
  return clones_.CloneOf(function, [&](Function& clone) {
    NameAllocator local_names(names_, clone);
    std::string param = local_names.Fresh("__tally_fence");
    // Calls inside the clone go to clones too (a recursive call finds the name made above).
    FenceFunction(clone, param, local_names);
  });
}

void MemoryFencer::Finish() { clones_.Finish(/*prototypes_first=*/true); }

}  // namespace tally::ptx::passes
