// Memory fencing: the checks before every global access, the fence registers and the fenced
// clones of called functions (see fence_memory.h).
#include "ptx_transform/passes/fence_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <optional>

#include "common/status.h"
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
  std::optional<WmmaTile> tile;  // wmma.load/store
};

// The footprint of wmma.{load,store}.{a,b,c,d}.sync.aligned.layout.shape{.ss}.type (PTX ISA
// "Warp Level Matrix Load/Store Instructions"): matrix a is M x K, b is K x N, c and d are
// M x N; a row layout strides rows, a col layout strides columns. Empty when unknown (sub-byte
// types, shapes we do not know): the caller refuses.
std::optional<WmmaTile> TileOf(const Instruction& inst) {
  uint64_t m = 0, n = 0, k = 0, bytes = 0;
  char matrix = 0;
  int layout = 0;  // 1 row, 2 col
  for (const std::string& mod : inst.modifiers) {
    if (mod.size() == 1 && std::string_view("abcd").find(mod[0]) != std::string_view::npos) {
      matrix = mod[0];
    } else if (mod == "row") {
      layout = 1;
    } else if (mod == "col") {
      layout = 2;
    } else if (mod == "s8" || mod == "u8") {
      bytes = 1;
    } else if (mod == "f16" || mod == "bf16") {
      bytes = 2;
    } else if (mod == "f32" || mod == "s32" || mod == "tf32") {
      bytes = 4;
    } else if (mod == "f64") {
      bytes = 8;
    } else if (mod.starts_with("m")) {
      unsigned mm = 0, nn = 0, kk = 0;
      char tail = 0;
      if (std::sscanf(mod.c_str(), "m%un%uk%u%c", &mm, &nn, &kk, &tail) == 3 && mm != 0 &&
          nn != 0 && kk != 0 && mm <= 32 && nn <= 32 && kk <= 32) {
        m = mm, n = nn, k = kk;
      }
    }
  }
  if (matrix == 0 || layout == 0 || bytes == 0 || m == 0) return std::nullopt;
  const uint64_t rows = matrix == 'b' ? k : m;
  const uint64_t cols = matrix == 'a' ? k : n;
  WmmaTile tile;
  tile.lines = layout == 1 ? rows : cols;
  tile.line_elements = layout == 1 ? cols : rows;
  tile.element_bytes = bytes;
  return tile;
}

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
  } else if (op == "wmma" && (inst.HasModifier("load") || inst.HasModifier("store"))) {
    // `wmma.load... {d...}, [p], stride;` / `wmma.store... [p], {s...}, stride;`. Without the
    // stride operand the default applies; nvcc always writes it, so we refuse rather than
    // assume what the default is.
    access.tile = TileOf(inst);
    if (!access.tile) {
      return refuse(
          fmt::format("{}: a tile shape or type the fence does not know", Spelling(inst)));
    }
    if (inst.operands.size() != 3 || index > 1 ||
        (inst.operands[2].kind != Operand::Kind::kName &&
         inst.operands[2].kind != Operand::Kind::kImmediate)) {
      return refuse(fmt::format("{} without a stride operand", Spelling(inst)));
    }
    if (inst.operands[2].kind == Operand::Kind::kName) {
      const std::string stride_type = names.RegisterType(inst.operands[2].name);
      if (stride_type != "b32" && stride_type != "u32" && stride_type != "s32") {
        return refuse(fmt::format("{} with a stride that is no 32-bit register", Spelling(inst)));
      }
    }
    access.tile->stride = 2;
    access.check = Access::Check::kData;
    access.operand = index;
    access.generic = space == Space::kGeneric;
  } else {
    // Generic ldmatrix, fence.proxy with an address, and whatever a later PTX adds.
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

// The CUDA runtime's device functions a fenced kernel may call, and which of their arguments
// are pointers the callee reads: __assertfail(message, file, line, function, char_size) and
// vprintf(format, arguments). vprintf's argument buffer is the caller's local memory; the
// pointers inside it (`%s` arguments) are checked where Tally's functions read them
// (FenceTarget::kDeviceOutput), not here.
std::vector<size_t> PointerArguments(std::string_view callee) {
  if (callee == "__assertfail") return {0, 1, 3};
  if (callee == "vprintf") return {0};
  return {};
}

// The `.param` names that calls of this statement list pass as pointer arguments to the
// runtime's functions (nvcc stores each argument with st.param in the call's own block).
std::set<std::string> PointerParams(const std::vector<Statement>& statements) {
  std::set<std::string> params;
  for (const Statement& s : statements) {
    const auto* inst = std::get_if<Instruction>(&s.value);
    if (inst == nullptr || inst->opcode != "call") continue;
    const Operand* target = CallTarget(*inst);
    if (target == nullptr) continue;
    const std::vector<size_t> pointers = PointerArguments(target->name);
    if (pointers.empty()) continue;
    Instruction copy = *inst;
    const Operand& args = CallArgumentList(copy, CallTargetIndex(copy));
    for (size_t i : pointers) {
      if (i < args.elements.size()) params.insert(args.elements[i].name);
    }
  }
  return params;
}

// Whether `inst` stores a pointer argument: `st.param.b64 [param], %rd` with a param above.
bool StoresPointerArgument(const Instruction& inst, const std::set<std::string>& params) {
  return inst.opcode == "st" && inst.HasModifier("param") && inst.operands.size() == 2 &&
         inst.operands[0].kind == Operand::Kind::kAddress &&
         inst.operands[0].elements.size() == 1 &&
         params.contains(inst.operands[0].elements[0].name);
}

// Why the pointer arguments of the runtime calls in `statements` (and nested blocks) cannot be
// fenced; empty when each is stored once, from a 64-bit register, in the call's block.
std::string PointerArgumentRefusal(const std::vector<Statement>& statements,
                                   const FunctionNames& names) {
  const std::set<std::string> params = PointerParams(statements);
  std::map<std::string, int> stores;
  for (const Statement& s : statements) {
    if (const auto* block = std::get_if<Block>(&s.value)) {
      std::string why = PointerArgumentRefusal(block->statements, names);
      if (!why.empty()) return why;
      continue;
    }
    const auto* inst = std::get_if<Instruction>(&s.value);
    if (inst == nullptr || !StoresPointerArgument(*inst, params)) continue;
    const Operand& value = inst->operands[1];
    const std::string type =
        value.kind == Operand::Kind::kName ? names.RegisterType(value.name) : "";
    if (inst->operands[0].elements[0].offset != 0 || !inst->guard.empty() ||
        (type != "b64" && type != "u64" && type != "s64")) {
      return "a pointer argument of __assertfail/vprintf not stored from a 64-bit register";
    }
    ++stores[inst->operands[0].elements[0].name];
  }
  for (const std::string& p : params) {
    if (stores[p] != 1) {
      return "a pointer argument of __assertfail/vprintf not stored once in the call's block";
    }
  }
  return "";
}

// The stores of pointer arguments of the runtime's functions in `statements` and nested blocks.
std::set<const Instruction*> PointerStores(const std::vector<Statement>& statements) {
  std::set<const Instruction*> stores;
  const std::set<std::string> params = PointerParams(statements);
  for (const Statement& s : statements) {
    if (const auto* block = std::get_if<Block>(&s.value)) {
      stores.merge(PointerStores(block->statements));
    } else if (const auto* inst = std::get_if<Instruction>(&s.value);
               inst != nullptr && StoresPointerArgument(*inst, params)) {
      stores.insert(inst);
    }
  }
  return stores;
}

// Whether an instruction of `statements` or nested blocks reads one of `registers`.
bool Reads(const std::vector<Statement>& statements, std::initializer_list<std::string> registers) {
  bool reads = false;
  ForEachInstruction(statements, [&](const Instruction& inst) {
    ForEachOperand(inst, [&](const Operand& op) {
      reads = reads || (op.kind == Operand::Kind::kName &&
                        std::find(registers.begin(), registers.end(), op.name) != registers.end());
    });
  });
  return reads;
}

// The bytes a module-scope variable occupies; 0 when its declaration does not say (an unsized
// array, an unknown type).
uint64_t VariableBytes(const VarDecl& var) {
  uint64_t bytes = ScalarTypeSize(var.type) * std::max<uint64_t>(var.vector_width, 1);
  for (const std::optional<uint64_t>& dim : var.dims) {
    if (!dim || *dim == 0 || bytes > (uint64_t{1} << 40) / *dim) return 0;
    bytes *= *dim;
  }
  return bytes;
}

Operand Negated(Operand op, bool negated) {
  op.negated = negated;
  return op;
}

}  // namespace

// The fence values and scratch registers of one function.
struct MemoryFencer::Registers {
  std::string fence;                   // the fence parameter
  std::string base[3], size[3], flag;  // b64; only base[0] and size[0] are read at entry
  std::string address, difference;     // b64 scratch
  std::string ok, bad, global;         // pred scratch: in range 0 (fast path), outside all
  std::string param;                   // pred scratch, when generic param addresses exist
  // When the function has wmma.load/store: the tile's last byte (b64), its stride (b32) and
  // whether it leaves one range (pred).
  std::string end, stride, outside;
  // b64: the checked bases of span groups (fence_spans.h), as many as the groups need at once.
  std::vector<std::string> span_bases;
  // Whether range 2 is read at entry too: where accesses through registers computed from a
  // module variable compare with it first (fence_variables.h).
  bool range2_at_entry = false;
};

MemoryFencer::MemoryFencer(Module& module, NameAllocator& names, FenceTarget target)
    : module_(module),
      clones_(module, names, "__tally_fence"),
      functions_(clones_.functions()),
      names_(names),
      target_(target) {
  for (const TopLevel& item : module.items) {
    if (const auto* var = std::get_if<VarDecl>(&item.value)) {
      module_variables_[var->name] = var->state_space;
      if (var->state_space == "global" && var->linkage != "extern") {
        if (const uint64_t bytes = VariableBytes(*var); bytes != 0) {
          global_variable_bytes_[var->name] = bytes;
        }
      }
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
  FindFunctionsNeedingFence();
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
  if (std::string why = PointerArgumentRefusal(function.body->statements, names); !why.empty()) {
    add(why + where);
  }
  ForEachInstruction(function.body->statements, [&](const Instruction& inst) {
    if (inst.opcode == "call") {
      const Operand* target = CallTarget(inst);
      const Function* callee = target != nullptr ? functions_.Find(target->name) : nullptr;
      if (callee == nullptr) {
        add("indirect call (its callee cannot be fenced)" + where);
      } else if (callee->body) {
        facts.callees.push_back(callee);
      } else if (PointerArguments(callee->name).empty()) {
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

// Which functions (with a body) check an access, call a function without a body (vprintf and
// __assertfail, whose pointer arguments are checked), or call one that needs the fence: the
// least fixed point over the module's calls (recursion included), computed before anything is
// fenced.
void MemoryFencer::FindFunctionsNeedingFence() {
  std::vector<const Function*> functions;
  for (const TopLevel& item : module_.items) {
    const auto* f = std::get_if<Function>(&item.value);
    if (f == nullptr || !f->body) continue;
    functions.push_back(f);
    const FunctionNames names(*f);
    bool own = false;
    ForEachInstruction(f->body->statements, [&](const Instruction& inst) {
      if (inst.opcode == "call") {
        const Operand* target = CallTarget(inst);
        const Function* callee = target != nullptr ? functions_.Find(target->name) : nullptr;
        own = own || callee == nullptr || !callee->body;
      } else {
        own = own || Classify(inst, names, module_variables_).check != Access::Check::kNone;
      }
    });
    needs_fence_[f->name] = own;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const Function* f : functions) {
      bool& needs = needs_fence_[f->name];
      for (const Function* callee : FactsOf(*f).callees) {
        if (!needs && needs_fence_[callee->name]) needs = changed = true;
      }
    }
  }
}

// A function the module did not have when it was made (a fenced clone) needs the fence.
bool MemoryFencer::NeedsFence(const Function& function) const {
  auto it = needs_fence_.find(function.name);
  return it == needs_fence_.end() || it->second;
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
  regs.fence = param;
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
  regs.ok = local_names.Fresh("%__tally_fence_ok");
  regs.bad = local_names.Fresh("%__tally_fence_bad");
  regs.global = local_names.Fresh("%__tally_fence_global");
  if (generic_params_) regs.param = local_names.Fresh("%__tally_fence_param");
  b64.insert(b64.end(), {regs.flag, regs.address, regs.difference});
  std::vector<std::string> b32;
  std::vector<std::string> preds = {regs.ok, regs.bad, regs.global};
  if (generic_params_) preds.push_back(regs.param);
  bool tiles = false;
  ForEachInstruction(function.body->statements,
                     [&](const Instruction& inst) { tiles = tiles || inst.opcode == "wmma"; });
  if (tiles) {
    regs.end = local_names.Fresh("%__tally_fence_end");
    regs.stride = local_names.Fresh("%__tally_fence_stride");
    regs.outside = local_names.Fresh("%__tally_fence_outside");
    b64.push_back(regs.end);
    b32.push_back(regs.stride);
    preds.push_back(regs.outside);
  }

  std::vector<Statement> prologue;
  prologue.push_back(DeclareRegisters("b64", std::move(b64)));
  if (!b32.empty()) prologue.push_back(DeclareRegisters("b32", std::move(b32)));
  prologue.push_back(DeclareRegisters("pred", std::move(preds)));
  const FunctionNames names(function);
  auto& body = function.body->statements;
  const std::set<const Instruction*> pointer_stores = PointerStores(body);
  const VariableAddresses variables = FindVariableAddresses(
      body, [&](const std::string& name) { return ModuleVariableBytes(name, names); },
      [&](const Instruction& inst) { return CheckedOperand(inst, names, pointer_stores); });
  regs.range2_at_entry = variables.derived_access;
  FenceStatements(body, regs, names, variables, local_names);
  if (!regs.span_bases.empty()) prologue.push_back(DeclareRegisters("b64", regs.span_bases));
  // Range 0 (the client's partition) is what almost every access hits: its bounds are read at
  // entry, and range 2's where accesses compare with it first; the rest where an access outside
  // those, a call or a tile needs them (LoadOtherRanges). A function whose accesses all go
  // unchecked reads none.
  for (int i : {0, 2}) {
    if ((i == 0 || regs.range2_at_entry) && Reads(body, {regs.base[i], regs.size[i]})) {
      prologue.push_back(
          Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.base[i]), Addr(param, 8 * i)})));
      prologue.push_back(
          Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.size[i]), Addr(param, 24 + 8 * i)})));
    }
  }
  body.insert(body.begin() + static_cast<std::ptrdiff_t>(FirstExecutableIndex(body)),
              std::make_move_iterator(prologue.begin()), std::make_move_iterator(prologue.end()));
}

// FenceParams: base[3] at 0, size[3] at 24, violation_flag at 48. Ranges 1 and 2 (range 1 alone
// where range 2 was read at entry) and the flag, read from the fence parameter where they are
// needed (ld.param of a kernel's or a function's own parameter is valid anywhere in its body).
void MemoryFencer::LoadOtherRanges(const Registers& regs, std::vector<Statement>& out) {
  for (int i = 1; i < (regs.range2_at_entry ? 2 : 3); ++i) {
    out.push_back(Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.base[i]), Addr(regs.fence, 8 * i)})));
    out.push_back(
        Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.size[i]), Addr(regs.fence, 24 + 8 * i)})));
  }
  out.push_back(Stmt(Inst("ld", {"param", "u64"}, {Reg(regs.flag), Addr(regs.fence, 48)})));
}

void MemoryFencer::FenceStatements(std::vector<Statement>& statements, Registers& regs,
                                   const FunctionNames& names, const VariableAddresses& variables,
                                   NameAllocator& local_names) {
  const std::set<std::string> pointer_params = PointerParams(statements);
  // Unguarded global data accesses through a register may share one check (fence_spans.h); the
  // device output functions' global accesses are to Tally's own memory and are not checked.
  const SpanPlan spans =
      PlanSpans(statements, [&](const Instruction& inst) -> std::optional<size_t> {
        if (target_ == FenceTarget::kDeviceOutput || !inst.guard.empty() ||
            StoresPointerArgument(inst, pointer_params) || variables.proven.contains(&inst)) {
          return std::nullopt;
        }
        const Access access = Classify(inst, names, module_variables_);
        if (access.check != Access::Check::kData || access.generic || access.tile)
          return std::nullopt;
        const Operand& base = inst.operands[access.operand].elements[0];
        if (base.kind != Operand::Kind::kName || names.RegisterType(base.name).empty()) {
          return std::nullopt;
        }
        return access.operand;
      });
  while (regs.span_bases.size() < spans.slots) {
    regs.span_bases.push_back(local_names.Fresh("%__tally_fence_span"));
  }
  std::vector<Statement> out;
  out.reserve(statements.size());
  for (size_t index = 0; index < statements.size(); ++index) {
    Statement& statement = statements[index];
    if (spans.group_of[index] != SpanPlan::kNone) {
      const SpanGroup& group = spans.groups[spans.group_of[index]];
      if (group.members[0] == index) {
        CheckSpan(group, regs, FirstRange(group.base, regs, variables),
                  local_names.Fresh("__tally_fence_checked"), out);
      }
      auto& inst = std::get<Instruction>(statement.value);
      const Access access = Classify(inst, names, module_variables_);
      inst.operands[access.operand].elements[0].name = regs.span_bases[group.slot];
      out.push_back(std::move(statement));
      continue;
    }
    if (auto* block = std::get_if<Block>(&statement.value)) {
      FenceStatements(block->statements, regs, names, variables, local_names);
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
      const bool runtime = callee == nullptr || !callee->body;  // __assertfail, vprintf
      if ((runtime && target_ != FenceTarget::kKernelsBeforeDeviceOutput) ||
          (!runtime && !NeedsFence(*callee))) {
        out.push_back(std::move(statement));
        continue;
      }
      // `{ .param .align 8 .b8 a[56]; st.param.b64 [a+0], %base0; ...; call f, (args..., a); }`
      if (!runtime) inst->operands[target_index].name = CloneOf(inst->operands[target_index].name);
      Operand& args = CallArgumentList(*inst, target_index);
      std::string arg = local_names.Fresh("__tally_fence_arg");
      VarDecl decl = Param("b8", arg);
      decl.align = 8;
      decl.dims.push_back(kFenceParamBytes);
      Block sequence;
      sequence.statements.push_back({Box<VarDecl>(std::move(decl))});
      LoadOtherRanges(regs, sequence.statements);
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
    if (variables.proven.contains(inst)) {  // inside a module variable: cannot fail
      out.push_back(std::move(statement));
      continue;
    }
    // A pointer argument of __assertfail/vprintf is checked as a generic access at that address
    // (an address in the client's shared or local memory passes), and the fenced value stored.
    const bool pointer_argument = StoresPointerArgument(*inst, pointer_params);
    Access access;
    if (pointer_argument) {
      access.check = Access::Check::kData;
      access.operand = 1;
      access.generic = true;
      inst->operands[1] = Addr(inst->operands[1].name);
    } else {
      access = Classify(*inst, names, module_variables_);
    }
    if (target_ == FenceTarget::kDeviceOutput && !access.generic) {
      access.check = Access::Check::kNone;  // Tally's own memory (fence_memory.h)
    }
    if (access.check == Access::Check::kNone ||
        (!access.tile && InModuleVariable(inst->operands[access.operand].elements[0], names))) {
      out.push_back(std::move(statement));
      continue;
    }
    // The start address into `address`, which the access then reads.
    Operand& operand = inst->operands[access.operand];
    const Operand& base = operand.elements[0];
    const int first = FirstRange(base.name, regs, variables);
    const std::string& address = regs.address;
    if (base.kind == Operand::Kind::kImmediate) {
      out.push_back(Stmt(Inst("mov", {"u64"}, {Reg(address), base})));
    } else if (!names.RegisterType(base.name).empty() && base.offset != 0) {
      out.push_back(Stmt(Inst("add", {"s64"}, {Reg(address), Reg(base.name), Imm(base.offset)})));
    } else {
      out.push_back(Stmt(Inst("mov", {"u64"}, {Reg(address), Reg(base.name)})));
      if (base.offset != 0) {
        out.push_back(Stmt(Inst("add", {"s64"}, {Reg(address), Reg(address), Imm(base.offset)})));
      }
    }
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
    const std::string checked = local_names.Fresh("__tally_fence_checked");
    if (access.tile) {
      FenceTile(*inst, *access.tile, access.operand, address, regs, checked, out);
      out.push_back(std::move(statement));
      continue;
    }
    CheckAccess(*inst, access.generic, access.check == Access::Check::kData, regs, first, checked,
                out);
    operand.elements[0] = Reg(address);
    if (pointer_argument) operand = Reg(address);
    if (target_ == FenceTarget::kDeviceOutput && inst->opcode == "ld") {
      // What was loaded from outside reads 0 (Tally's code loads into one register); `ok` is
      // false exactly when the load executed redirected.
      const Operand& value = inst->operands[0];
      const std::string type = names.RegisterType(value.name);
      TALLY_CHECK(value.kind == Operand::Kind::kName && !type.empty());
      Instruction zero = Guard(Inst("mov", {type}, {value, Imm(0)}), regs.ok, /*negated=*/true);
      out.push_back(std::move(statement));
      out.push_back(Stmt(std::move(zero)));
      continue;
    }
    out.push_back(std::move(statement));
  }
  statements = std::move(out);
}

// Whether an address `base` (a name plus an offset) starts inside a `.global` variable the
// module defines: the server puts every variable of a fenced module in range 2
// (module_registry.cc's VariableRangeOf), so a check of an access there would always pass. (Not
// for a tile, which may end past the variable.)
bool MemoryFencer::InModuleVariable(const Operand& base, const FunctionNames& names) const {
  return base.kind == Operand::Kind::kName && base.offset >= 0 &&
         static_cast<uint64_t>(base.offset) < ModuleVariableBytes(base.name, names);
}

// The bytes of the module's `.global` variable `name` means in a function; 0 where it means
// none: a register, or a name of the function's own that hides the module's.
uint64_t MemoryFencer::ModuleVariableBytes(const std::string& name,
                                           const FunctionNames& names) const {
  if (!names.RegisterType(name).empty() || names.VariableSpace(name) != nullptr) return 0;
  auto it = global_variable_bytes_.find(name);
  return it == global_variable_bytes_.end() ? 0 : it->second;
}

// Which range the check of an access through `base` compares with first: range 2 where the
// register is computed from a module variable (fence_variables.h) and range 2 is read at entry.
int MemoryFencer::FirstRange(const std::string& base, const Registers& regs,
                             const VariableAddresses& variables) {
  return regs.range2_at_entry && variables.derived.contains(base) ? 2 : 0;
}

// The address operand the fence checks in `inst` (FindVariableAddresses' question): a pointer
// argument's register, or the address of a data access or hint other than a tile.
std::optional<size_t> MemoryFencer::CheckedOperand(
    const Instruction& inst, const FunctionNames& names,
    const std::set<const Instruction*>& pointer_stores) const {
  if (pointer_stores.contains(&inst)) return 1;
  const Access access = Classify(inst, names, module_variables_);
  if (access.check == Access::Check::kNone || access.tile ||
      (target_ == FenceTarget::kDeviceOutput && !access.generic)) {
    return std::nullopt;
  }
  return access.operand;
}

namespace {

// The two ranges a check compares with after range `first`, in order.
std::array<int, 2> OtherRanges(int first) {
  return first == 0 ? std::array{1, 2} : std::array{0, 1};
}

// `@bad st.global.u32 [flag], 1`: the violation the server reports as an illegal address.
Statement RaiseFlag(const std::string& flag, const std::string& bad) {
  return Stmt(Guard(Inst("st", {"global", "u32"}, {Addr(flag), Imm(1)}), bad));
}

}  // namespace

// The check of one access at `regs.address` (global, or where %global holds for a generic one).
// The fast path: ok = the access does not execute, or its address is no global one, or it lies
// in range `first` (0, or 2 for an address computed from a module variable); then it branches
// to `checked`, just before the access. Otherwise (it executes, at a global address outside
// that range) the other ranges are read and checked, and bad = outside them all redirects the
// access to base[0] and raises the flag (not for a hint).
void MemoryFencer::CheckAccess(const Instruction& inst, bool generic, bool raise_flag,
                               const Registers& regs, int first, const std::string& checked,
                               std::vector<Statement>& out) {
  const bool guarded = !inst.guard.empty();
  if (generic && guarded) {
    // ok takes one negated predicate from setp; the other is ORed in, negated here.
    out.push_back(Stmt(Inst("not", {"pred"}, {Reg(regs.global), Reg(regs.global)})));
  }
  out.push_back(
      Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(regs.address), Reg(regs.base[first])})));
  std::vector<Operand> operands = {Reg(regs.ok), Reg(regs.difference), Reg(regs.size[first])};
  if (guarded) {
    operands.push_back(Negated(Reg(inst.guard), !inst.guard_negated));
  } else if (generic) {
    operands.push_back(Negated(Reg(regs.global), true));
  }
  out.push_back(operands.size() == 4 ? Stmt(Inst("setp", {"lt", "or", "u64"}, operands))
                                     : Stmt(Inst("setp", {"lt", "u64"}, operands)));
  if (generic && guarded) {
    out.push_back(Stmt(Inst("or", {"pred"}, {Reg(regs.ok), Reg(regs.ok), Reg(regs.global)})));
  }
  out.push_back(Stmt(Guard(Inst("bra", {}, {Reg(checked)}), regs.ok)));
  LoadOtherRanges(regs, out);
  for (int i : OtherRanges(first)) {
    out.push_back(
        Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(regs.address), Reg(regs.base[i])})));
    std::vector<Operand> compare = {Reg(regs.bad), Reg(regs.difference), Reg(regs.size[i])};
    if (i != OtherRanges(first)[0]) compare.push_back(Reg(regs.bad));
    out.push_back(compare.size() == 4 ? Stmt(Inst("setp", {"ge", "and", "u64"}, compare))
                                      : Stmt(Inst("setp", {"ge", "u64"}, compare)));
  }
  out.push_back(Stmt(Inst(
      "selp", {"b64"}, {Reg(regs.address), Reg(regs.base[0]), Reg(regs.address), Reg(regs.bad)})));
  if (raise_flag) out.push_back(RaiseFlag(regs.flag, regs.bad));
  if (target_ == FenceTarget::kDeviceOutput) {
    out.push_back(Stmt(Inst("not", {"pred"}, {Reg(regs.ok), Reg(regs.bad)})));
  }
  out.push_back(LabelAt(checked));
}

// One check for the accesses of `group`, before its first member (fence_spans.h says why it
// suffices): bad = the highest start H = base + max_offset lies, for every range i, outside
// [base_i + D, base_i + size_i) (D the span), i.e. H - base_i >= size_i or H - base_i < D. The
// fast path tests range `first` alone (as CheckAccess) and branches to `checked`; the others are
// read and tested only when it fails. The group's span register gets the base or, when bad,
// base[0] + (base mod 256) - (the lowest offset rounded down to 256): each member then lands in
// base[0]'s first kMaxSpanBytes + 768 bytes at an address congruent to its own modulo 256, so its
// alignment is kept.
void MemoryFencer::CheckSpan(const SpanGroup& group, const Registers& regs, int first,
                             const std::string& checked_label, std::vector<Statement>& out) {
  const std::string& checked = regs.span_bases[group.slot];
  const int64_t span = group.max_offset - group.min_offset;
  out.push_back(
      Stmt(Inst("add", {"s64"}, {Reg(regs.address), Reg(group.base), Imm(group.max_offset)})));
  // outside_i = H is outside [base_i + D, base_i + size_i).
  auto compare = [&](int i, const std::string& outside) {
    out.push_back(
        Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(regs.address), Reg(regs.base[i])})));
    out.push_back(
        Stmt(Inst("setp", {"ge", "u64"}, {Reg(outside), Reg(regs.difference), Reg(regs.size[i])})));
    if (span > 0) {
      out.push_back(Stmt(Inst("setp", {"lt", "or", "u64"},
                              {Reg(outside), Reg(regs.difference), Imm(span), Reg(outside)})));
    }
  };
  compare(first, regs.bad);
  out.push_back(Stmt(Inst("mov", {"b64"}, {Reg(checked), Reg(group.base)})));
  out.push_back(Stmt(Guard(Inst("bra", {}, {Reg(checked_label)}), regs.bad, /*negated=*/true)));
  LoadOtherRanges(regs, out);
  compare(OtherRanges(first)[0], regs.bad);
  // regs.global is free: a group's accesses are global, never generic.
  compare(OtherRanges(first)[1], regs.global);
  out.push_back(Stmt(Inst("and", {"pred"}, {Reg(regs.bad), Reg(regs.bad), Reg(regs.global)})));
  const int64_t lowest_block = group.min_offset >= 0 ? group.min_offset / 256 * 256
                                                     : -((-group.min_offset + 255) / 256 * 256);
  out.push_back(Stmt(Inst("and", {"b64"}, {Reg(regs.address), Reg(group.base), Imm(255)})));
  out.push_back(
      Stmt(Inst("add", {"s64"}, {Reg(regs.address), Reg(regs.address), Reg(regs.base[0])})));
  if (lowest_block != 0) {
    out.push_back(
        Stmt(Inst("sub", {"s64"}, {Reg(regs.address), Reg(regs.address), Imm(lowest_block)})));
  }
  out.push_back(Stmt(
      Inst("selp", {"b64"}, {Reg(checked), Reg(regs.address), Reg(group.base), Reg(regs.bad)})));
  out.push_back(RaiseFlag(regs.flag, regs.bad));
  out.push_back(LabelAt(checked_label));
}

// A wmma tile: its first byte `address` and its last byte must lie in the same range (a range
// is an interval, so every line between lies in it too); otherwise the tile goes to base[0]
// with the dense stride, so that it stays within the sink (at most 32 lines of 32 elements of
// 8 bytes: 8 KiB, far below the 2 MiB granule the server maps at base[0]). The stride is read
// as unsigned for the last byte, and a stride that is negative as a signed 32-bit value is a
// violation, so the check holds whichever reading the hardware makes. Every thread of the warp
// checks its own address and stride: the hardware computes each thread's fragment addresses
// from that thread's operands (.aligned requires them to be equal anyway).
// %global already says (for a generic tile) whether the address is global and no parameter's.
void MemoryFencer::FenceTile(Instruction& inst, const WmmaTile& tile, size_t operand,
                             const std::string& address, const Registers& regs,
                             const std::string& checked, std::vector<Statement>& out) {
  const bool generic = AccessSpace(inst) == Space::kGeneric;
  Operand& stride = inst.operands[tile.stride];
  out.push_back(Stmt(Inst("mov", {"b32"}, {Reg(regs.stride), stride})));
  out.push_back(Stmt(Inst("mul", {"wide", "u32"},
                          {Reg(regs.end), Reg(regs.stride),
                           Imm(static_cast<int64_t>((tile.lines - 1) * tile.element_bytes))})));
  out.push_back(
      Stmt(Inst("add", {"s64"},
                {Reg(regs.end), Reg(regs.end),
                 Imm(static_cast<int64_t>(tile.line_elements * tile.element_bytes - 1))})));
  out.push_back(Stmt(Inst("add", {"s64"}, {Reg(regs.end), Reg(regs.end), Reg(address)})));
  // The fast path: both ends in range 0 and the stride not negative leave nothing to change
  // (whatever the guard and the space; a tile they exempt takes the slow path, which says so).
  out.push_back(
      Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(address), Reg(regs.base[0])})));
  out.push_back(
      Stmt(Inst("setp", {"lt", "u64"}, {Reg(regs.ok), Reg(regs.difference), Reg(regs.size[0])})));
  out.push_back(
      Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(regs.end), Reg(regs.base[0])})));
  out.push_back(Stmt(Inst("setp", {"lt", "and", "u64"},
                          {Reg(regs.ok), Reg(regs.difference), Reg(regs.size[0]), Reg(regs.ok)})));
  out.push_back(Stmt(
      Inst("setp", {"ge", "and", "s32"}, {Reg(regs.ok), Reg(regs.stride), Imm(0), Reg(regs.ok)})));
  out.push_back(Stmt(Guard(Inst("bra", {}, {Reg(checked)}), regs.ok)));
  LoadOtherRanges(regs, out);
  // outside_i = first or last byte not in range i; bad = outside every range.
  for (int i = 0; i < 3; ++i) {
    const std::string& outside = i == 0 ? regs.bad : regs.outside;
    out.push_back(
        Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(address), Reg(regs.base[i])})));
    out.push_back(
        Stmt(Inst("setp", {"ge", "u64"}, {Reg(outside), Reg(regs.difference), Reg(regs.size[i])})));
    out.push_back(
        Stmt(Inst("sub", {"s64"}, {Reg(regs.difference), Reg(regs.end), Reg(regs.base[i])})));
    out.push_back(
        Stmt(Inst("setp", {"ge", "or", "u64"},
                  {Reg(outside), Reg(regs.difference), Reg(regs.size[i]), Reg(outside)})));
    if (i > 0) {
      out.push_back(Stmt(Inst("and", {"pred"}, {Reg(regs.bad), Reg(regs.bad), Reg(outside)})));
    }
  }
  out.push_back(Stmt(
      Inst("setp", {"lt", "or", "s32"}, {Reg(regs.bad), Reg(regs.stride), Imm(0), Reg(regs.bad)})));
  if (generic)
    out.push_back(Stmt(Inst("and", {"pred"}, {Reg(regs.bad), Reg(regs.bad), Reg(regs.global)})));
  if (!inst.guard.empty()) {
    // A guarded tile that does not execute raises nothing: bad = false unless the guard holds.
    out.push_back(
        Stmt(Guard(Inst("setp", {"ne", "u64"}, {Reg(regs.bad), Reg(regs.end), Reg(regs.end)}),
                   inst.guard, !inst.guard_negated)));
  }
  out.push_back(Stmt(
      Inst("selp", {"b64"}, {Reg(regs.address), Reg(regs.base[0]), Reg(address), Reg(regs.bad)})));
  out.push_back(Stmt(Inst("selp", {"b32"},
                          {Reg(regs.stride), Imm(static_cast<int64_t>(tile.line_elements)),
                           Reg(regs.stride), Reg(regs.bad)})));
  out.push_back(RaiseFlag(regs.flag, regs.bad));
  out.push_back(LabelAt(checked));
  inst.operands[operand].elements[0] = Reg(regs.address);
  stride = Reg(regs.stride);
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
