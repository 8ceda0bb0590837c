// Spin-wait detection: a taint analysis of each loop, seeded by its polling loads. Example of a
// loop that waits (the exit predicate comes from the polled value):
//
//   $wait:  ld.volatile.global.u32 %r1, [%rd1];  setp.eq.u32 %p, %r1, 0;  @%p bra $wait;
//
// and of one that does not (the polled values only flow into the sum %r3; the exit predicate
// comes from the counter %r2):
//
//   $sum:   ld.volatile.global.u32 %r1, [%rd1];  add.s32 %r3, %r3, %r1;  add.s64 %rd1, %rd1, 4;
//           add.s32 %r2, %r2, -1;  setp.ne.s32 %p, %r2, 0;  @%p bra $sum;
#include "ptx_transform/passes/spin_waits.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {
namespace {

// Loads that observe memory other blocks write while the kernel runs (PTX ISA "Memory
// Consistency Model"): the ways to poll. Plain loads may be hoisted out of a loop.
bool IsPollingLoad(const Instruction& inst) {
  if (inst.opcode != "ld" && inst.opcode != "ldu") return false;
  for (std::string_view space : {"shared", "local", "param", "const"}) {
    if (inst.HasModifier(space)) return false;
  }
  for (std::string_view m : {"volatile", "acquire", "relaxed", "cv", "cg", "mmio"}) {
    if (inst.HasModifier(m)) return true;
  }
  return false;
}

// Atomics read memory other blocks write, too: `while (atomicAdd(&arrived, 0) < n)` is a grid
// barrier. The one exemption is the compare-and-swap update idiom (`assumed = old; old =
// atomicCAS(p, assumed, f(assumed))` until they match): its expected value is a register and
// differs from the value swapped in, and it retries only while other threads make progress. A
// CAS whose expected and new values are the same operand only reads, and is polling.
bool IsPollingAtomic(const Instruction& inst) {
  if (inst.opcode != "atom" || inst.HasModifier("shared")) return false;
  if (!inst.HasModifier("cas") || inst.operands.size() != 4) return true;
  const Operand& expected = inst.operands[2];
  const Operand& swapped_in = inst.operands[3];
  return expected.kind != Operand::Kind::kName || expected == swapped_in;
}

// Instructions that decide where control goes (or whether the thread goes on at all).
bool IsControl(const Instruction& inst) {
  for (std::string_view op : {"bra", "brx", "ret", "exit", "trap", "call"}) {
    if (inst.opcode == op) return true;
  }
  return false;
}

bool IsBarrierWithoutResult(const Instruction& inst) {
  return (inst.opcode == "bar" || inst.opcode == "barrier") && !inst.HasModifier("red");
}

// Whether operands[0] is a register the instruction writes. Everything not listed writes its
// first operand (the PTX convention), so an unknown instruction only ever adds taint.
bool WritesFirstOperand(const Instruction& inst) {
  constexpr std::string_view kNoDestination[] = {
      "st", "red", "cp", "stmatrix", "bra", "brx", "ret", "exit", "trap", "membar", "fence",
      "prefetch", "prefetchu", "nanosleep", "pmevent", "discard", "applypriority"};
  if (inst.opcode == "call") return CallTargetIndex(inst) > 0;  // `call (ret), f, (args)`
  if (IsBarrierWithoutResult(inst)) return false;
  if (inst.opcode == "wmma" && inst.HasModifier("store")) return false;
  return std::find(std::begin(kNoDestination), std::end(kNoDestination), inst.opcode) ==
         std::end(kNoDestination);
}

bool WritesMemory(const Instruction& inst) {
  for (std::string_view op : {"st", "red", "atom", "cp", "stmatrix", "multimem"}) {
    if (inst.opcode == op) return true;
  }
  return (inst.opcode == "wmma" && inst.HasModifier("store")) || inst.opcode == "call";
}

// Calls f(name) for every register-like name in `op` (addresses, vectors, pairs, lists).
template <typename F>
void ForEachName(const Operand& op, F&& f) {
  if (op.kind == Operand::Kind::kName) f(std::string_view(op.name));
  for (const Operand& element : op.elements) ForEachName(element, f);
}

bool ReadsMemory(const Instruction& inst) {
  return std::any_of(inst.operands.begin(), inst.operands.end(),
                     [](const Operand& op) { return op.kind == Operand::Kind::kAddress; }) ||
         inst.opcode == "call";  // results come back through .param memory
}

// The taint of one loop: registers whose value may depend on a polled value, and whether
// memory written in the loop may hold such a value (then everything the loop loads may, too).
class LoopTaint {
 public:
  // Adds what `inst` propagates; true when it is a control instruction that depends on taint.
  bool Step(const Instruction& inst) {
    const size_t first_source = WritesFirstOperand(inst) ? 1 : 0;
    bool tainted = IsPollingLoad(inst) || IsPollingAtomic(inst) || (memory_ && ReadsMemory(inst)) ||
                   (!inst.guard.empty() && tainted_.contains(inst.guard));
    for (size_t i = first_source; i < inst.operands.size() && !tainted; ++i) {
      ForEachName(inst.operands[i], [&](std::string_view name) {
        tainted = tainted || tainted_.contains(name);
      });
    }
    if (!tainted) return false;
    if (IsControl(inst)) return true;
    if (first_source == 1) {
      ForEachName(inst.operands[0], [&](std::string_view name) {
        changed_ = tainted_.insert(name).second || changed_;
      });
    }
    if (WritesMemory(inst) && !memory_) memory_ = changed_ = true;
    return false;
  }
  // Whether the last pass over the loop added taint (loop-carried values need another).
  bool TakeChanged() { return std::exchange(changed_, false); }

 private:
  absl::flat_hash_set<std::string_view> tainted_;
  bool memory_ = false;
  bool changed_ = false;
};

// Whether the loop `body` waits on memory: runs the taint to its fixed point.
bool WaitsOnPolledValue(const std::vector<const Instruction*>& body) {
  LoopTaint taint;
  do {
    for (const Instruction* inst : body) {
      if (taint.Step(*inst)) return true;
    }
  } while (taint.TakeChanged());
  return false;
}

}  // namespace

std::string FindSpinWait(const std::vector<Statement>& body) {
  std::vector<const Statement*> flat;
  std::map<std::string, size_t, std::less<>> label_index;
  auto flatten = [&](auto& self, const std::vector<Statement>& statements) -> void {
    for (const auto& s : statements) {
      if (const auto* label = std::get_if<Label>(&s.value)) label_index[label->name] = flat.size();
      if (const auto* block = std::get_if<Block>(&s.value)) {
        self(self, block->statements);
      } else {
        flat.push_back(&s);
      }
    }
  };
  flatten(flatten, body);
  std::vector<const Instruction*> loop;
  for (size_t i = 0; i < flat.size(); ++i) {
    const auto* branch = std::get_if<Instruction>(&flat[i]->value);
    if (branch == nullptr || branch->opcode != "bra" || branch->operands.empty()) continue;
    auto target = label_index.find(branch->operands[0].name);
    if (target == label_index.end() || target->second > i) continue;
    loop.clear();
    bool polls = false;
    for (size_t j = target->second; j <= i; ++j) {
      const auto* inst = std::get_if<Instruction>(&flat[j]->value);
      if (inst == nullptr) continue;
      if (inst->opcode == "nanosleep") return "sleeps in a loop";
      polls = polls || IsPollingLoad(*inst) || IsPollingAtomic(*inst);
      loop.push_back(inst);
    }
    if (polls && WaitsOnPolledValue(loop)) return "polls memory in a loop";
  }
  return "";
}

}  // namespace tally::ptx::passes
