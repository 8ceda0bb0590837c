// Spin-wait detection: a taint analysis of each loop, seeded by its polling loads and by the
// calls whose callees pass a polled value on. Example of a loop that waits (the exit predicate
// comes from the polled value):
//
//   $wait:  ld.volatile.global.u32 %r1, [%rd1];  setp.eq.u32 %p, %r1, 0;  @%p bra $wait;
//
// and of one that does not (the polled values only flow into the sum %r3; the exit predicate
// comes from the counter %r2):
//
//   $sum:   ld.volatile.global.u32 %r1, [%rd1];  add.s32 %r3, %r3, %r1;  add.s64 %rd1, %rd1, 4;
//           add.s32 %r2, %r2, -1;  setp.ne.s32 %p, %r2, 0;  @%p bra $sum;
//
// A loop waits through a call, too: `read_flag` returns the value it polls (its summary says
// so), which makes the call a polling read of the loop:
//
//   .func (.param .b32 r) read_flag(.param .b64 f)
//   { ...  ld.volatile.global.u32 %r1, [%rd2];  st.param.b32 [r], %r1;  ret; }
//   $wait:  { ...  call.uni (retval0), read_flag, (param0);  ld.param.b32 %r1, [retval0]; }
//           setp.eq.s32 %p, %r1, 0;  @%p bra $wait;
#include "ptx_transform/passes/spin_waits.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"

namespace tally::ptx::passes {
namespace {

// Scope .cta: the operation synchronises only with the threads of its own block (PTX ISA,
// "Memory Consistency Model", "Scope"); a block that waited through it for another block's
// write would race with that write, which no correct program does. Cooperative groups' tiles of
// several warps wait for each other so (ld.acquire.cta, atom.or.acq_rel.cta on a barrier word in
// shared memory reached through a generic address).
bool WithinBlockScope(const Instruction& inst) { return inst.HasModifier("cta"); }

// Loads that observe memory other blocks write while the kernel runs (PTX ISA "Memory
// Consistency Model"): the ways to poll. Plain loads may be hoisted out of a loop.
bool IsPollingLoad(const Instruction& inst) {
  if (inst.opcode != "ld" && inst.opcode != "ldu") return false;
  if (WithinBlockScope(inst)) return false;
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
  if (inst.opcode != "atom" || inst.HasModifier("shared") || WithinBlockScope(inst)) return false;
  if (!inst.HasModifier("cas") || inst.operands.size() != 4) return true;
  const Operand& expected = inst.operands[2];
  const Operand& swapped_in = inst.operands[3];
  return expected.kind != Operand::Kind::kName || expected == swapped_in;
}

bool IsPollingRead(const Instruction& inst) { return IsPollingLoad(inst) || IsPollingAtomic(inst); }

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
      "st",        "red",       "cp",      "stmatrix", "bra",          "brx",
      "ret",       "exit",      "trap",    "membar",   "fence",        "prefetch",
      "prefetchu", "nanosleep", "pmevent", "discard",  "applypriority"};
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
         inst.opcode == "call";
}

using NameSet = absl::flat_hash_set<std::string_view>;

// The `.param` variables of `f`: its parameters and return values, and the arguments and
// results of its call sequences. A load or store naming one moves a value like a register
// move; no other memory access reaches them (PTX ISA "Parameter State Space").
NameSet ParamVariables(const Function& f) {
  NameSet names;
  for (const auto* list : {&f.params, &f.returns}) {
    for (const VarDecl& v : *list) names.insert(v.name);
  }
  auto walk = [&](auto& self, const std::vector<Statement>& statements) -> void {
    for (const auto& s : statements) {
      if (const auto* v = std::get_if<Box<VarDecl>>(&s.value)) {
        if ((*v)->state_space == "param") names.insert((*v)->name);
      } else if (const auto* block = std::get_if<Block>(&s.value)) {
        self(self, block->statements);
      }
    }
  };
  if (f.body) walk(walk, f.body->statements);
  return names;
}

// The `.param` variable that a `ld.param`/`st.param` names as its address, or nullptr.
const Operand* ParamVariableAccessed(const Instruction& inst, const NameSet& params) {
  if ((inst.opcode != "ld" && inst.opcode != "st") || !inst.HasModifier("param")) return nullptr;
  for (const Operand& op : inst.operands) {
    if (op.kind == Operand::Kind::kAddress && !op.elements.empty() &&
        op.elements[0].kind == Operand::Kind::kName && params.contains(op.elements[0].name)) {
      return &op.elements[0];
    }
  }
  return nullptr;
}

// What a call may do to its caller.
struct CallEffects {
  bool returns_polled = false;  // its return values may carry a polled value
  bool stores_polled = false;   // memory it writes (out-parameters, globals) may hold one
  bool exits_polled = false;    // whether it exits (or traps) may depend on one
  bool can_exit = false;        // it, or a function it calls, may `exit` or `trap`
  bool Polls() const { return returns_polled || stores_polled || exits_polled; }
  friend bool operator==(const CallEffects&, const CallEffects&) = default;
};

// Indirect calls and unknown external functions: anything.
constexpr CallEffects kUnknownCallee{true, true, true, true};

// The effects of the callee of a `call`; nullptr for one that has none.
using CallEffectsOf = absl::FunctionRef<const CallEffects*(const Instruction&)>;

// The taint of a loop (or of a whole function): names whose value may depend on a polled
// value, and whether memory written there may hold one (then everything it loads may, too).
class Taint {
 public:
  Taint(const NameSet& params, CallEffectsOf effects_of)
      : params_(params), effects_of_(effects_of) {}

  // Adds what `inst` propagates; true when it is a control instruction that depends on taint.
  // A call is one when its callee may exit (the only way a call leaves the caller's loop: the
  // callee's own loops are asked on their own) and its inputs are tainted, or when the callee
  // exits depending on a value it polls.
  bool Step(const Instruction& inst) {
    const size_t first_source = WritesFirstOperand(inst) ? 1 : 0;
    const Operand* param = ParamVariableAccessed(inst, params_);
    const bool tainted = InputsTainted(inst);
    bool control = tainted && IsControl(inst) && inst.opcode != "call";
    bool results = tainted && first_source == 1;
    bool stores = tainted && WritesMemory(inst);
    if (inst.opcode == "call") {
      if (const CallEffects* callee = effects_of_(inst)) {
        control = (tainted && callee->can_exit) || callee->exits_polled;
        results = results || (callee->returns_polled && first_source == 1);
        stores = stores || callee->stores_polled;
      }
    }
    if (param != nullptr && inst.opcode == "st") {
      if (tainted) Add(param->name);
      stores = false;
    }
    if (results) ForEachName(inst.operands[0], [&](std::string_view name) { Add(name); });
    if (stores && !memory_) memory_ = changed_ = true;
    return control;
  }
  // Whether what `inst` reads (its guard included) may depend on a polled value.
  bool InputsTainted(const Instruction& inst) const {
    bool tainted =
        IsPollingRead(inst) ||
        (memory_ && ReadsMemory(inst) && ParamVariableAccessed(inst, params_) == nullptr) ||
        (!inst.guard.empty() && tainted_.contains(inst.guard));
    for (size_t i = WritesFirstOperand(inst) ? 1 : 0; i < inst.operands.size() && !tainted; ++i) {
      ForEachName(inst.operands[i],
                  [&](std::string_view name) { tainted = tainted || tainted_.contains(name); });
    }
    return tainted;
  }
  // Whether the last pass added taint (loop-carried values need another).
  bool TakeChanged() { return std::exchange(changed_, false); }
  bool memory() const { return memory_; }
  bool Contains(std::string_view name) const { return tainted_.contains(name); }

 private:
  void Add(std::string_view name) { changed_ = tainted_.insert(name).second || changed_; }

  const NameSet& params_;
  CallEffectsOf effects_of_;
  NameSet tainted_;
  bool memory_ = false;
  bool changed_ = false;
};

// Runs the taint over `code` (a loop body, or a whole function) to its fixed point; true when
// some control instruction depends on a polled value.
bool ControlDependsOnPolledValue(const std::vector<const Instruction*>& code, Taint& taint) {
  bool control = false;
  do {
    for (const Instruction* inst : code) control = taint.Step(*inst) || control;
  } while (taint.TakeChanged());
  return control;
}

// The control flow between a function's instructions (flattened in order; `label_index` maps a
// label to the instruction after it), for finding the instructions of a loop wherever the
// compiler laid them out.
class FlowGraph {
 public:
  FlowGraph(const std::vector<const Instruction*>& flat,
            const absl::flat_hash_map<std::string_view, size_t>& label_index)
      : successors_(flat.size()), predecessors_(flat.size()) {
    std::vector<size_t> all_labels;  // where an indirect branch (brx.idx) may go
    for (const auto& [name, index] : label_index) all_labels.push_back(index);
    for (size_t i = 0; i < flat.size(); ++i) {
      const Instruction& inst = *flat[i];
      const bool guarded = !inst.guard.empty();
      bool falls_through = true;
      if (inst.opcode == "bra" && !inst.operands.empty()) {
        auto target = label_index.find(inst.operands[0].name);
        if (target != label_index.end()) Add(i, target->second);
        falls_through = guarded;
      } else if (inst.opcode == "brx") {
        for (size_t target : all_labels) Add(i, target);
        falls_through = guarded;
      } else if (inst.opcode == "ret" || inst.opcode == "exit" || inst.opcode == "trap") {
        falls_through = guarded;
      }
      if (falls_through) Add(i, i + 1);
    }
  }

  const std::vector<size_t>& successors(size_t i) const { return successors_[i]; }
  // The instructions on some path from `header` to `latch` (the body of the loop whose back edge
  // goes from `latch` to `header`, including blocks laid out after the branch), in order.
  std::vector<size_t> Loop(size_t header, size_t latch) const {
    const std::vector<bool> from_header = Reach(header, successors_);
    const std::vector<bool> to_latch = Reach(latch, predecessors_);
    std::vector<size_t> loop;
    for (size_t i = 0; i < from_header.size(); ++i) {
      if (from_header[i] && to_latch[i]) loop.push_back(i);
    }
    return loop;
  }

 private:
  void Add(size_t from, size_t to) {
    if (to >= successors_.size()) return;  // a label at the end: nothing runs there
    successors_[from].push_back(to);
    predecessors_[to].push_back(from);
  }
  static std::vector<bool> Reach(size_t start, const std::vector<std::vector<size_t>>& edges) {
    std::vector<bool> seen(edges.size(), false);
    std::vector<size_t> stack{start};
    seen[start] = true;
    while (!stack.empty()) {
      const size_t n = stack.back();
      stack.pop_back();
      for (size_t next : edges[n]) {
        if (!seen[next]) {
          seen[next] = true;
          stack.push_back(next);
        }
      }
    }
    return seen;
  }

  std::vector<std::vector<size_t>> successors_;
  std::vector<std::vector<size_t>> predecessors_;
};

// Everything the finder knows about one function with a body.
struct Summary {
  CallEffects effects;
  bool polled_control = false;  // some control instruction of it depends on a polled value
  bool recursive = false;       // it is on a cycle of the call graph
  bool done = false;            // final (its whole component of the call graph is summarised)
  std::string origin;           // the function whose polling read it passes on (for reports)
};

}  // namespace

class SpinWaitFinder::Impl {
 public:
  explicit Impl(const FunctionIndex& functions) : functions_(functions) {}

  std::string Find(const Function& f) {
    if (!f.body) return "";
    Summarise(f);
    const NameSet params = ParamVariables(f);
    auto effects_of = [this](const Instruction& call) { return EffectsOf(call); };

    std::vector<const Instruction*> flat;  // the instructions, in order
    absl::flat_hash_map<std::string_view, size_t> label_index;
    auto flatten = [&](auto& self, const std::vector<Statement>& statements) -> void {
      for (const auto& s : statements) {
        if (const auto* label = std::get_if<Label>(&s.value)) {
          label_index.try_emplace(label->name, flat.size());
        } else if (const auto* block = std::get_if<Block>(&s.value)) {
          self(self, block->statements);
        } else if (const auto* inst = std::get_if<Instruction>(&s.value)) {
          flat.push_back(inst);
        }
      }
    };
    flatten(flatten, f.body->statements);

    // Every cycle of the control flow has a branch backwards in program order: the loops are
    // found from those branches, and their bodies from the flow graph.
    const FlowGraph graph(flat, label_index);
    std::vector<std::pair<size_t, size_t>> back_edges;  // (header, latch)
    for (size_t i = 0; i < flat.size(); ++i) {
      for (size_t target : graph.successors(i)) {
        if (target <= i) back_edges.emplace_back(target, i);
      }
    }
    std::vector<const Instruction*> loop;
    for (const auto& [header, latch] : back_edges) {
      loop.clear();
      for (size_t index : graph.Loop(header, latch)) loop.push_back(flat[index]);
      bool reads_directly = false;
      const Instruction* polling_call = nullptr;
      for (const Instruction* inst : loop) {
        if (inst->opcode == "nanosleep") return "sleeps in a loop";
        reads_directly = reads_directly || IsPollingRead(*inst);
        if (polling_call == nullptr && inst->opcode == "call") {
          const CallEffects* effects = EffectsOf(*inst);
          if (effects != nullptr && effects->Polls()) polling_call = inst;
        }
      }
      if (!reads_directly && polling_call == nullptr) continue;
      Taint taint(params, effects_of);
      if (!ControlDependsOnPolledValue(loop, taint)) continue;
      if (reads_directly) return "polls memory in a loop";
      return "polls memory in a loop through " + DescribeCall(*polling_call);
    }
    const Summary& summary = nodes_.at(&f).summary;
    if (summary.recursive && summary.polled_control) return "polls memory in a recursion";
    return "";
  }

 private:
  struct Node {
    std::vector<const Function*> callees;  // with bodies, each once
    size_t component = 0;                  // of the call graph, numbered from 1 once known
    Summary summary;
  };

  const Function* Callee(const Instruction& call) const {
    const Operand* target = CallTarget(call);
    return target == nullptr ? nullptr : functions_.Find(target->name);
  }

  const CallEffects* EffectsOf(const Instruction& call) const {
    const Function* callee = Callee(call);
    if (callee != nullptr && !callee->body && IsKnownExternalFunction(callee->name)) {
      return nullptr;
    }
    auto it = callee == nullptr ? nodes_.end() : nodes_.find(callee);
    return it == nodes_.end() ? &kUnknownCallee : &it->second.summary.effects;
  }

  // "called function F" (and where F's polled value comes from when not from F itself).
  std::string DescribeCall(const Instruction& call) const {
    const Function* callee = Callee(call);
    auto it = callee == nullptr ? nodes_.end() : nodes_.find(callee);
    if (it == nodes_.end()) {
      return callee == nullptr ? "an indirect call"
                               : "external function " + callee->name + " (unknown behaviour)";
    }
    const std::string& origin = it->second.summary.origin;
    std::string text = "called function " + callee->name;
    if (!origin.empty() && origin != callee->name) text += " (polling in " + origin + ")";
    return text;
  }

  Node& NodeOf(const Function& f) {
    auto [it, inserted] = nodes_.try_emplace(&f);
    if (inserted) {
      // Not the binding itself: clang before 16 refuses lambdas that capture one.
      std::vector<const Function*>& callees = it->second.callees;
      ForEachInstruction(f.body->statements, [&](const Instruction& inst) {
        if (inst.opcode != "call") return;
        const Function* callee = Callee(inst);
        if (callee == nullptr || !callee->body) return;
        if (std::find(callees.begin(), callees.end(), callee) == callees.end()) {
          callees.push_back(callee);
        }
      });
    }
    return it->second;
  }

  // Summarises every function reachable from `root` that is not yet: the strongly connected
  // components of the call graph, callees before callers (Tarjan's algorithm, iterative so
  // that a deep call chain cannot overflow the stack).
  void Summarise(const Function& root) {
    if (NodeOf(root).summary.done) return;
    struct Visit {
      size_t index;
      size_t low;
      bool on_stack;
    };
    struct Frame {
      const Function* f;
      size_t next_callee;
    };
    absl::flat_hash_map<const Function*, Visit> visits;
    std::vector<const Function*> stack;
    std::vector<Frame> frames;
    auto enter = [&](const Function* f) {
      const size_t index = visits.size();
      visits[f] = {index, index, true};
      stack.push_back(f);
      frames.push_back({f, 0});
    };
    enter(&root);
    while (!frames.empty()) {
      const Function* f = frames.back().f;
      const std::vector<const Function*>& callees = NodeOf(*f).callees;
      if (frames.back().next_callee < callees.size()) {
        const Function* callee = callees[frames.back().next_callee++];
        if (NodeOf(*callee).summary.done) continue;
        auto seen = visits.find(callee);
        if (seen == visits.end()) {
          enter(callee);
        } else if (seen->second.on_stack) {
          visits[f].low = std::min(visits[f].low, seen->second.index);
        }
        continue;
      }
      frames.pop_back();
      const Visit visit = visits[f];
      if (!frames.empty()) {
        Visit& caller = visits[frames.back().f];
        caller.low = std::min(caller.low, visit.low);
      }
      if (visit.low != visit.index) continue;
      std::vector<const Function*> component;
      do {
        component.push_back(stack.back());
        visits[stack.back()].on_stack = false;
        stack.pop_back();
      } while (component.back() != f);
      SummariseComponent(component);
    }
  }

  // Summaries start at "passes nothing on" and only grow with the callees', so iterating over
  // a recursive component reaches the least fixed point.
  void SummariseComponent(const std::vector<const Function*>& component) {
    const bool cycle = component.size() > 1 || [&] {
      const auto& callees = NodeOf(*component[0]).callees;
      return std::find(callees.begin(), callees.end(), component[0]) != callees.end();
    }();
    ++components_;
    for (const Function* f : component) {
      Node& node = NodeOf(*f);
      node.component = components_;
      node.summary.recursive = cycle;
    }
    bool changed;
    do {
      changed = false;
      for (const Function* f : component) changed = SummariseOnce(*f) || changed;
    } while (changed && cycle);
    for (const Function* f : component) NodeOf(*f).summary.done = true;
  }

  // Recomputes the summary of `f` from its callees' current ones; true when it changed.
  bool SummariseOnce(const Function& f) {
    Node& node = NodeOf(f);
    Summary updated;
    updated.recursive = node.summary.recursive;
    std::vector<const Instruction*> code;
    bool reads_directly = false;
    ForEachInstruction(f.body->statements, [&](const Instruction& inst) {
      code.push_back(&inst);
      reads_directly = reads_directly || IsPollingRead(inst);
      if (inst.opcode == "exit" || inst.opcode == "trap") updated.effects.can_exit = true;
      if (inst.opcode != "call") return;
      const CallEffects* effects = EffectsOf(inst);
      if (effects == nullptr) return;
      updated.effects.can_exit = updated.effects.can_exit || effects->can_exit;
      if (updated.origin.empty() && effects->Polls()) {
        updated.origin =
            effects == &kUnknownCallee ? "an unknown callee" : NodeOf(*Callee(inst)).summary.origin;
      }
    });
    if (reads_directly) updated.origin = f.name;
    if (!updated.origin.empty()) {
      const NameSet params = ParamVariables(f);
      auto effects_of = [this](const Instruction& call) { return EffectsOf(call); };
      Taint taint(params, effects_of);
      updated.polled_control = ControlDependsOnPolledValue(code, taint);
      // A recursive call is the back edge of a loop: its arguments are loop-carried values.
      if (node.summary.recursive) {
        for (const Instruction* inst : code) {
          if (inst->opcode != "call") continue;
          const Function* callee = Callee(*inst);
          if (callee != nullptr && callee->body && NodeOf(*callee).component == node.component &&
              taint.InputsTainted(*inst)) {
            updated.polled_control = true;
          }
        }
      }
      // A polled value that steers a branch may decide any value or store after it.
      const bool everything = taint.memory() || updated.polled_control;
      updated.effects.stores_polled = everything;
      updated.effects.returns_polled =
          everything || std::any_of(f.returns.begin(), f.returns.end(),
                                    [&](const VarDecl& r) { return taint.Contains(r.name); });
      updated.effects.exits_polled = updated.polled_control && updated.effects.can_exit;
    }
    const bool changed = updated.effects != node.summary.effects ||
                         updated.polled_control != node.summary.polled_control;
    node.summary = std::move(updated);
    return changed;
  }

  const FunctionIndex& functions_;
  std::map<const Function*, Node> nodes_;  // a std::map: references stay valid as it grows
  size_t components_ = 0;
};

SpinWaitFinder::SpinWaitFinder(const FunctionIndex& functions)
    : impl_(std::make_unique<Impl>(functions)) {}
SpinWaitFinder::~SpinWaitFinder() = default;
std::string SpinWaitFinder::Find(const Function& f) { return impl_->Find(f); }

}  // namespace tally::ptx::passes
