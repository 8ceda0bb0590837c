// Unified synchronisation pass. Once a kernel body runs inside the PTB loop, a thread that
// returns early must not leave: it would wait at the loop's barrier while the others wait at
// a barrier of the body, and the block would hang. So every full-CTA barrier and every exit
// becomes a branch to one synchronisation point, where all threads of the block meet:
//
//   @%p ret;                           @%p mov.u32 %site, EXIT; @%p bra $sync;
//   bar.sync 0;                        mov.u32 %site, 0; bra $sync;  $resume_0:
//   bar.red.popc.u32 %r1, 0, %p;       selp.u32 %contrib, 1, 0, %p; mov.u32 %site, 1;
//                                      bra $sync;  $resume_1: mov.u32 %r1, %red;
//                                    $sync:
//                                      barrier.red.popc: how many threads are not exited?
//                                      none: all exited -> bra $task_end
//                                      barrier.red.popc of %contrib (bar.red results)
//                                      dispatch on %site to $resume_N; exited: bra $sync
//
// Exited threads keep meeting the others at every barrier until all have exited, so they
// count as arrived, as on Volta and newer GPUs. bar.red keeps its meaning: exited threads and
// plain barriers contribute nothing, `.and` counts false predicates, `.or` true ones.
// Barriers with a thread count (named partial barriers) are left in place; the analysis
// refuses PTB for kernels that have them. One difference remains, for programs whose behaviour
// CUDA leaves undefined: threads waiting at different full-CTA barriers at once (a hang on a
// GPU, a launch failure on the emulated GPU) all meet here and go on.
#include <cstdint>

#include "ptx_transform/passes/passes.h"

namespace tally::ptx::passes {
namespace {

struct Registers {
  std::string site, contrib, nlive, red;      // b32
  std::string live, alldone, nonzero, match;  // pred
};

bool IsFullBarrier(const Instruction& inst) {
  if (inst.opcode != "bar" && inst.opcode != "barrier") return false;
  if (inst.HasModifier("warp") || inst.HasModifier("cluster") || inst.HasModifier("arrive")) {
    return false;
  }
  size_t id_index = inst.HasModifier("red") ? 1 : 0;
  size_t operands_without_count = inst.HasModifier("red") ? 3 : 1;
  return inst.operands.size() == operands_without_count &&
         inst.operands[id_index].kind == Operand::Kind::kImmediate;
}

Instruction Guarded(Instruction inst, const Instruction& original) {
  if (original.guard.empty()) return inst;
  return Guard(std::move(inst), original.guard, original.guard_negated);
}

class Unifier {
 public:
  Unifier(const Registers& regs, std::string sync_label, NameAllocator& names)
      : regs_(regs), sync_(std::move(sync_label)), names_(names) {}

  // Rewrites barriers and exits of `statements` (nested blocks included).
  void Rewrite(std::vector<Statement>& statements) {
    for (size_t i = 0; i < statements.size(); ++i) {
      if (auto* block = std::get_if<Block>(&statements[i].value)) {
        Rewrite(block->statements);
        continue;
      }
      auto* inst = std::get_if<Instruction>(&statements[i].value);
      if (inst == nullptr) continue;
      std::vector<Statement> replacement;
      if (inst->opcode == "ret" || inst->opcode == "exit") {
        AppendBranchToSync(replacement, *inst, kExitSite, /*contrib=*/nullptr);
      } else if (IsFullBarrier(*inst)) {
        ReplaceBarrier(*inst, replacement);
      } else {
        continue;
      }
      statements.erase(statements.begin() + static_cast<std::ptrdiff_t>(i));
      statements.insert(statements.begin() + static_cast<std::ptrdiff_t>(i),
                        std::make_move_iterator(replacement.begin()),
                        std::make_move_iterator(replacement.end()));
      i += replacement.size() - 1;
    }
  }

  // The code after the body: falling off its end is an exit, then the synchronisation point.
  void AppendSyncPoint(std::vector<Statement>& out, int barrier_id, const std::string& task_end) {
    AppendBranchToSync(out, Instruction{}, kExitSite, nullptr);
    out.push_back(LabelAt(sync_));
    out.push_back(
        Stmt(Inst("setp", {"ne", "u32"}, {Reg(regs_.live), Reg(regs_.site), Imm(kExitSite)})));
    out.push_back(Stmt(Inst("barrier", {"red", "popc", "u32"},
                            {Reg(regs_.nlive), Imm(barrier_id), Reg(regs_.live)})));
    out.push_back(
        Stmt(Inst("setp", {"eq", "u32"}, {Reg(regs_.alldone), Reg(regs_.nlive), Imm(0)})));
    out.push_back(Stmt(Guard(Inst("bra", {}, {Reg(task_end)}), regs_.alldone)));
    if (has_reductions_) {
      out.push_back(
          Stmt(Inst("setp", {"ne", "u32"}, {Reg(regs_.nonzero), Reg(regs_.contrib), Imm(0)})));
      out.push_back(Stmt(Inst("barrier", {"red", "popc", "u32"},
                              {Reg(regs_.red), Imm(barrier_id), Reg(regs_.nonzero)})));
    }
    for (size_t site = 0; site < resume_labels_.size(); ++site) {
      out.push_back(
          Stmt(Inst("setp", {"eq", "u32"},
                    {Reg(regs_.match), Reg(regs_.site), Imm(static_cast<int64_t>(site))})));
      out.push_back(Stmt(Guard(Inst("bra", {}, {Reg(resume_labels_[site])}), regs_.match)));
    }
    out.push_back(Stmt(Inst("bra", {}, {Reg(sync_)})));  // exited: wait for the next barrier
  }

 private:
  // Barrier sites are numbered from 0 in program order; exits use a value above any site.
  static constexpr int64_t kExitSite = int64_t{1} << 30;

  // `[guard] mov %site, N; [guard] <contrib>; [guard] bra $sync;`
  void AppendBranchToSync(std::vector<Statement>& out, const Instruction& original, int64_t site,
                          const Operand* predicate) {
    out.push_back(Stmt(Guarded(Inst("mov", {"u32"}, {Reg(regs_.site), Imm(site)}), original)));
    if (predicate == nullptr) {
      out.push_back(Stmt(Guarded(Inst("mov", {"u32"}, {Reg(regs_.contrib), Imm(0)}), original)));
    } else {
      // contrib = predicate ? 1 : 0, with `!p` swapping the two.
      Operand p = *predicate;
      bool negated = p.negated;
      p.negated = false;
      out.push_back(
          Stmt(Guarded(Inst("selp", {"u32"},
                            {Reg(regs_.contrib), Imm(negated ? 0 : 1), Imm(negated ? 1 : 0), p}),
                       original)));
    }
    out.push_back(Stmt(Guarded(Inst("bra", {}, {Reg(sync_)}), original)));
  }

  void ReplaceBarrier(const Instruction& barrier, std::vector<Statement>& out) {
    int64_t site = static_cast<int64_t>(resume_labels_.size());
    std::string resume = names_.Fresh("$__tally_resume");
    resume_labels_.push_back(resume);
    if (!barrier.HasModifier("red")) {
      AppendBranchToSync(out, barrier, site, nullptr);
      out.push_back(LabelAt(resume));
      return;
    }
    has_reductions_ = true;
    // bar.red.popc.u32 d, a, c / bar.red.and.pred p, a, c / bar.red.or.pred p, a, c
    const Operand& dest = barrier.operands[0];
    Operand predicate = barrier.operands[2];
    bool is_and = barrier.HasModifier("and");
    if (is_and) predicate.negated = !predicate.negated;  // count the false ones
    AppendBranchToSync(out, barrier, site, &predicate);
    out.push_back(LabelAt(resume));
    if (barrier.HasModifier("popc")) {
      out.push_back(Stmt(Guarded(Inst("mov", {"u32"}, {dest, Reg(regs_.red)}), barrier)));
    } else {
      out.push_back(Stmt(Guarded(
          Inst("setp", {is_and ? "eq" : "ne", "u32"}, {dest, Reg(regs_.red), Imm(0)}), barrier)));
    }
  }

  const Registers& regs_;
  std::string sync_;
  NameAllocator& names_;
  std::vector<std::string> resume_labels_;
  bool has_reductions_ = false;
};

// Without barriers there is nothing to meet at: an exit simply ends the task.
void BranchExitsTo(std::vector<Statement>& statements, const std::string& task_end) {
  for (auto& s : statements) {
    if (auto* block = std::get_if<Block>(&s.value)) BranchExitsTo(block->statements, task_end);
    auto* inst = std::get_if<Instruction>(&s.value);
    if (inst == nullptr || (inst->opcode != "ret" && inst->opcode != "exit")) continue;
    Instruction branch = Guarded(Inst("bra", {}, {Reg(task_end)}), *inst);
    branch.location = inst->location;
    *inst = std::move(branch);
  }
}

bool HasFullBarrier(const std::vector<Statement>& statements) {
  for (const auto& s : statements) {
    if (const auto* block = std::get_if<Block>(&s.value)) {
      if (HasFullBarrier(block->statements)) return true;
    }
    const auto* inst = std::get_if<Instruction>(&s.value);
    if (inst != nullptr && IsFullBarrier(*inst)) return true;
  }
  return false;
}

}  // namespace

void UnifySynchronisation(std::vector<Statement>& body, int barrier_id, const std::string& task_end,
                          NameAllocator& names, std::vector<Statement>& declarations) {
  if (!HasFullBarrier(body)) {
    BranchExitsTo(body, task_end);
    return;
  }
  Registers regs{names.Fresh("%__tally_site"),    names.Fresh("%__tally_contrib"),
                 names.Fresh("%__tally_nlive"),   names.Fresh("%__tally_red"),
                 names.Fresh("%__tally_live"),    names.Fresh("%__tally_alldone"),
                 names.Fresh("%__tally_nonzero"), names.Fresh("%__tally_match")};
  declarations.push_back(DeclareRegisters("b32", {regs.site, regs.contrib, regs.nlive, regs.red}));
  declarations.push_back(
      DeclareRegisters("pred", {regs.live, regs.alldone, regs.nonzero, regs.match}));
  Unifier unifier(regs, names.Fresh("$__tally_sync"), names);
  unifier.Rewrite(body);
  unifier.AppendSyncPoint(body, barrier_id, task_end);
}

}  // namespace tally::ptx::passes
