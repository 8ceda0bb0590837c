// Kernel analysis: walks a kernel and, transitively, the functions it calls, collecting special
// registers, barriers, exits and everything that makes slicing or PTB unsafe. When in doubt it
// refuses: a kernel left in its original form is slower, a wrong transformation is a bug.
#include "ptx_transform/kernel_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "ptx_transform/passes/ir_walk.h"
#include "ptx_transform/passes/spin_waits.h"

namespace tally::ptx {
namespace {

using passes::CallTarget;
using passes::ForEachInstruction;
using passes::ForEachOperand;

enum class SregClass { kHarmless, kGrid, kForbidden };

struct SregInfo {
  std::string_view name;
  SregClass cls;
  bool numbered;  // `%envreg3`, `%pm0`: the name continues with digits (and `_64`)
  const char* why = "";
};

// PTX ISA "Special Registers".
constexpr SregInfo kSpecialRegisters[] = {
    {"%tid", SregClass::kHarmless, false},
    {"%ntid", SregClass::kHarmless, false},
    {"%laneid", SregClass::kHarmless, false},
    {"%warpid", SregClass::kHarmless, false},
    {"%nwarpid", SregClass::kHarmless, false},
    {"%ctaid", SregClass::kGrid, false},
    {"%nctaid", SregClass::kGrid, false},
    {"%smid", SregClass::kForbidden, false, "reads %smid (logic that depends on the SM)"},
    {"%nsmid", SregClass::kForbidden, false, "reads %nsmid (logic that depends on the SMs)"},
    {"%gridid", SregClass::kForbidden, false, "reads %gridid (differs between launches)"},
    {"%envreg", SregClass::kForbidden, true,
     "reads %envreg (grid-wide synchronisation of cooperative launches)"},
    {"%is_explicit_cluster", SregClass::kForbidden, false, "uses thread-block clusters"},
    {"%clusterid", SregClass::kForbidden, false, "uses thread-block clusters"},
    {"%nclusterid", SregClass::kForbidden, false, "uses thread-block clusters"},
    {"%cluster_ctaid", SregClass::kForbidden, false, "uses thread-block clusters"},
    {"%cluster_nctaid", SregClass::kForbidden, false, "uses thread-block clusters"},
    {"%cluster_ctarank", SregClass::kForbidden, false, "uses thread-block clusters"},
    {"%cluster_nctarank", SregClass::kForbidden, false, "uses thread-block clusters"},
    {"%lanemask_eq", SregClass::kHarmless, false},
    {"%lanemask_le", SregClass::kHarmless, false},
    {"%lanemask_lt", SregClass::kHarmless, false},
    {"%lanemask_ge", SregClass::kHarmless, false},
    {"%lanemask_gt", SregClass::kHarmless, false},
    {"%clock", SregClass::kHarmless, false},
    {"%clock_hi", SregClass::kHarmless, false},
    {"%clock64", SregClass::kHarmless, false},
    {"%pm", SregClass::kHarmless, true},
    {"%globaltimer", SregClass::kHarmless, false},
    {"%globaltimer_lo", SregClass::kHarmless, false},
    {"%globaltimer_hi", SregClass::kHarmless, false},
    {"%reserved_smem_offset_begin", SregClass::kHarmless, false},
    {"%reserved_smem_offset_end", SregClass::kHarmless, false},
    {"%reserved_smem_offset_cap", SregClass::kHarmless, false},
    {"%reserved_smem_offset_", SregClass::kHarmless, true},
    {"%total_smem_size", SregClass::kHarmless, false},
    {"%aggr_smem_size", SregClass::kHarmless, false},
    {"%dynamic_smem_size", SregClass::kHarmless, false},
    {"%current_graph_exec", SregClass::kForbidden, false, "reads %current_graph_exec"},
};

const SregInfo* FindSpecialRegister(std::string_view name) {
  if (name.size() < 2 || name[0] != '%') return nullptr;
  for (const SregInfo& info : kSpecialRegisters) {
    if (name == info.name) return &info;
    if (info.numbered && name.size() > info.name.size() &&
        name.substr(0, info.name.size()) == info.name) {
      std::string_view rest = name.substr(info.name.size());
      if (rest.find_first_not_of("0123456789_") == std::string_view::npos && rest[0] != '_') {
        return &info;
      }
    }
  }
  return nullptr;
}

// Instructions whose semantics span blocks or depend on block residency (PTX ISA: mbarrier,
// TMA/bulk copies, warpgroup MMA, tensor-core gen 5, programmatic dependent launch, cluster
// addressing, dynamic register reallocation for warp specialisation).
constexpr std::pair<std::string_view, const char*> kForbiddenOpcodes[] = {
    {"mbarrier", "uses mbarrier objects"},
    {"tensormap", "uses tensor maps (TMA)"},
    {"wgmma", "uses warpgroup MMA"},
    {"tcgen05", "uses tcgen05 tensor memory"},
    {"griddepcontrol", "uses programmatic dependent launch"},
    {"clusterlaunchcontrol", "uses cluster launch control"},
    {"mapa", "uses distributed shared memory (clusters)"},
    {"getctarank", "uses distributed shared memory (clusters)"},
    {"setmaxnreg", "reallocates registers between warps (warp specialisation)"},
};

struct BodyFacts {
  std::set<std::string> special_registers;
  std::vector<BarrierUse> barriers;
  std::set<int64_t> barrier_ids;
  uint32_t exits = 0;  // `ret`/`exit` for kernels, `exit` for functions
  std::vector<std::string> both_blockers;
  std::vector<std::string> ptb_blockers;
  std::vector<std::string> callees;  // direct calls of functions with bodies
  std::set<std::string> names;       // every name operand (for dynamic shared memory)
};

void AddUnique(std::vector<std::string>& list, std::string item) {
  for (const auto& existing : list)
    if (existing == item) return;
  list.push_back(std::move(item));
}

std::optional<BarrierUse> AsBarrier(const Instruction& inst) {
  if (inst.opcode != "bar" && inst.opcode != "barrier") return std::nullopt;
  if (inst.HasModifier("warp") || inst.HasModifier("cluster")) return std::nullopt;
  BarrierUse use;
  use.location = inst.location;
  size_t id_index = 0;
  if (inst.HasModifier("red")) {
    use.form = inst.opcode + ".red";
    id_index = 1;
  } else if (inst.HasModifier("arrive")) {
    use.form = inst.opcode + ".arrive";
  } else {
    use.form = inst.opcode + ".sync";
  }
  if (inst.operands.size() <= id_index) return use;
  const Operand& id = inst.operands[id_index];
  if (id.kind == Operand::Kind::kImmediate && id.expr->kind == Expr::Kind::kInt) {
    use.id = id.expr->int_value;
  }
  // bar.sync a{, b}; bar.red.op d, a{, b}, c: the optional b is the thread count.
  use.has_count = inst.operands.size() == id_index + (use.form.ends_with(".red") ? 3 : 2);
  return use;
}

// Facts about one body, not following calls.
BodyFacts ScanBody(const passes::FunctionIndex& functions, passes::SpinWaitFinder& spin_waits,
                   const Function& f) {
  BodyFacts facts;
  const std::string where = f.is_entry ? "" : fmt::format(" in called function {}", f.name);
  ForEachInstruction(f.body->statements, [&](const Instruction& inst) {
    for (const auto& [opcode, why] : kForbiddenOpcodes) {
      if (inst.opcode == opcode) AddUnique(facts.both_blockers, why + where);
    }
    if (inst.HasModifier("shared::cluster") ||
        (inst.opcode == "barrier" && inst.HasModifier("cluster")) ||
        ((inst.opcode == "st" || inst.opcode == "red") && inst.HasModifier("async"))) {
      AddUnique(facts.both_blockers, "uses thread-block clusters" + where);
    }
    // cp.async.bulk (and cp.reduce.async.bulk) are the bulk copies; cp.async.mbarrier.arrive
    // only makes an mbarrier track the thread's earlier cp.async copies (PTX ISA, "Data Movement
    // and Conversion Instructions").
    if (inst.opcode == "cp" && inst.HasModifier("bulk")) {
      AddUnique(facts.both_blockers, "uses bulk asynchronous copies (TMA)" + where);
    } else if (inst.opcode == "cp" && inst.HasModifier("mbarrier")) {
      AddUnique(facts.both_blockers, "uses mbarrier objects" + where);
    }
    if (auto barrier = AsBarrier(inst)) {
      if (barrier->id >= 0) facts.barrier_ids.insert(barrier->id);
      if (!f.is_entry) {
        AddUnique(facts.ptb_blockers, "barrier" + where);
      } else {
        if (barrier->id < 0) AddUnique(facts.ptb_blockers, "barrier id in a register");
        if (barrier->has_count || barrier->form.ends_with(".arrive")) {
          AddUnique(facts.ptb_blockers,
                    fmt::format("{} with a thread count (partial-CTA barrier)", barrier->form));
        }
        facts.barriers.push_back(*barrier);
      }
    }
    if (inst.opcode == "exit" || (f.is_entry && inst.opcode == "ret")) {
      ++facts.exits;
      if (!f.is_entry) AddUnique(facts.ptb_blockers, "exit" + where);
    }
    if (inst.opcode == "call") {
      const Operand* target = CallTarget(inst);
      const Function* callee = target ? functions.Find(target->name) : nullptr;
      if (callee == nullptr) {
        AddUnique(facts.both_blockers, "indirect call (unknown callee)" + where);
      } else if (callee->body) {
        AddUnique(facts.callees, callee->name);
      } else if (!passes::IsKnownExternalFunction(callee->name)) {
        AddUnique(
            facts.both_blockers,
            fmt::format("calls external function {} (unknown behaviour){}", callee->name, where));
      }
    }
    ForEachOperand(inst, [&](const Operand& op) {
      if (op.kind != Operand::Kind::kName) return;
      facts.names.insert(op.name);
      const SregInfo* sreg = FindSpecialRegister(op.name);
      if (sreg == nullptr) return;
      std::string full = op.component ? fmt::format("{}.{}", op.name, op.component) : op.name;
      facts.special_registers.insert(full);
      if (sreg->cls == SregClass::kForbidden) AddUnique(facts.both_blockers, sreg->why + where);
      if (sreg->cls == SregClass::kGrid && op.component == 0) {
        AddUnique(facts.both_blockers, fmt::format("reads {} as a whole vector{}", op.name, where));
      }
    });
  });

  // Spin-waits need all blocks resident and in order (decoupled look-back, grid barriers
  // built from flags): another block may never run before this one finishes.
  const std::string spin_wait = spin_waits.Find(f);
  if (!spin_wait.empty()) {
    AddUnique(facts.both_blockers,
              spin_wait + " (may wait for other blocks: inter-block dependency)" + where);
  }
  return facts;
}

}  // namespace

class KernelAnalyzer::Impl {
 public:
  explicit Impl(const Module& module) : functions_(module) {
    for (const auto& item : module.items) {
      const auto* v = std::get_if<VarDecl>(&item.value);
      if (v != nullptr && v->state_space == "shared" && v->linkage == "extern") {
        dynamic_shared_.insert(v->name);
      }
    }
  }

  KernelAnalysis Run(const Function& kernel) {
    KernelAnalysis result;
    result.kernel = kernel.name;
    if (!kernel.body) {
      result.slice_blockers.push_back("kernel has no body");
      result.ptb_blockers.push_back("kernel has no body");
      return result;
    }
    BodyFacts own = ScanBody(functions_, spin_waits_, kernel);
    result.barriers = own.barriers;
    result.exits = own.exits;
    Merge(own, result, /*from_callee=*/"");
    std::set<std::string> visited;
    for (const auto& callee : own.callees) Visit(callee, result, visited);
    for (const auto& sreg : result.special_registers) {
      if (sreg.starts_with("%ctaid") || sreg.starts_with("%nctaid")) result.reads_grid = true;
    }
    result.ptb_blockers.insert(result.ptb_blockers.begin(), result.slice_blockers.begin(),
                               result.slice_blockers.end());
    if (result.barrier_ids.size() >= 16) {
      AddUnique(result.ptb_blockers, "uses all 16 barriers (the PTB loop needs one of its own)");
    }
    return result;
  }

 private:
  void Visit(const std::string& name, KernelAnalysis& result, std::set<std::string>& visited) {
    if (!visited.insert(name).second) return;  // recursion and shared callees: once each
    auto [it, inserted] = cache_.try_emplace(name);
    if (inserted) it->second = ScanBody(functions_, spin_waits_, *functions_.Find(name));
    const BodyFacts& facts = it->second;
    Merge(facts, result, name);
    for (const auto& callee : facts.callees) Visit(callee, result, visited);
  }

  void Merge(const BodyFacts& facts, KernelAnalysis& result, const std::string& function) {
    result.special_registers.insert(facts.special_registers.begin(), facts.special_registers.end());
    result.barrier_ids.insert(facts.barrier_ids.begin(), facts.barrier_ids.end());
    for (const auto& b : facts.both_blockers) AddUnique(result.slice_blockers, b);
    for (const auto& b : facts.ptb_blockers) AddUnique(result.ptb_blockers, b);
    for (const auto& name : facts.names) {
      if (dynamic_shared_.count(name) || name == "%dynamic_smem_size") {
        result.uses_dynamic_shared = true;
      }
    }
    if (!function.empty()) {
      for (const auto& sreg : facts.special_registers) {
        if (sreg.starts_with("%ctaid") || sreg.starts_with("%nctaid")) {
          AddUnique(result.grid_reading_functions, function);
          break;
        }
      }
    }
  }

  passes::FunctionIndex functions_;
  passes::SpinWaitFinder spin_waits_{functions_};  // summaries of called functions, shared too
  std::set<std::string> dynamic_shared_;
  std::map<std::string, BodyFacts> cache_;  // facts of called functions, shared by kernels
};

KernelAnalyzer::KernelAnalyzer(const Module& module) : impl_(std::make_unique<Impl>(module)) {}
KernelAnalyzer::~KernelAnalyzer() = default;
KernelAnalysis KernelAnalyzer::Analyze(const Function& kernel) { return impl_->Run(kernel); }

bool IsSpecialRegister(std::string_view name) { return FindSpecialRegister(name) != nullptr; }

KernelAnalysis AnalyzeKernel(const Module& module, const Function& kernel) {
  return KernelAnalyzer(module).Analyze(kernel);
}

}  // namespace tally::ptx
