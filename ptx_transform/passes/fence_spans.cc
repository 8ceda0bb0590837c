// Groups of accesses the fence checks at once (see fence_spans.h).
#include "ptx_transform/passes/fence_spans.h"

#include <algorithm>
#include <map>

#include "ptx_transform/passes/ir_walk.h"

namespace tally::ptx::passes {
namespace {

// Instructions after which the next ones may not run, or run on another path.
bool TransfersControl(const Instruction& inst) {
  static constexpr std::string_view kOpcodes[] = {"bra",  "brx",  "call", "ret",
                                                  "exit", "trap", "brkpt"};
  return std::find(std::begin(kOpcodes), std::end(kOpcodes), inst.opcode) != std::end(kOpcodes);
}

// Calls `f` with every name `inst` reads or writes other than the base of an address (which an
// access only reads).
template <typename F>
void ForEachNameOutsideAddresses(const Instruction& inst, F&& f) {
  auto visit = [&](auto& self, const Operand& op) -> void {
    if (op.kind == Operand::Kind::kName) f(op.name);
    const size_t first = op.kind == Operand::Kind::kAddress ? 1 : 0;
    for (size_t i = first; i < op.elements.size(); ++i) self(self, op.elements[i]);
  };
  for (const Operand& op : inst.operands) visit(visit, op);
  if (!inst.guard.empty()) f(inst.guard);
}

// Gives each group a span register no overlapping group holds (groups in order of their first
// member, a register free again after a group's last member).
size_t AssignSlots(std::vector<SpanGroup>& groups) {
  std::sort(groups.begin(), groups.end(),
            [](const SpanGroup& a, const SpanGroup& b) { return a.members[0] < b.members[0]; });
  std::vector<size_t> busy_until;  // per slot: the last member of its current group
  for (SpanGroup& group : groups) {
    auto free = std::find_if(busy_until.begin(), busy_until.end(),
                             [&](size_t last) { return last < group.members[0]; });
    if (free == busy_until.end()) free = busy_until.insert(busy_until.end(), 0);
    *free = group.members.back();
    group.slot = static_cast<size_t>(free - busy_until.begin());
  }
  return busy_until.size();
}

}  // namespace

SpanPlan PlanSpans(
    const std::vector<Statement>& statements,
    const std::function<std::optional<size_t>(const Instruction&)>& address_operand) {
  SpanPlan plan;
  std::map<std::string, SpanGroup> open;  // by base register
  auto close = [&](std::map<std::string, SpanGroup>::iterator it) {
    if (it->second.members.size() >= 2) plan.groups.push_back(std::move(it->second));
    return open.erase(it);
  };
  auto close_all = [&] {
    for (auto it = open.begin(); it != open.end();) it = close(it);
  };
  for (size_t i = 0; i < statements.size(); ++i) {
    const auto* inst = std::get_if<Instruction>(&statements[i].value);
    if (inst == nullptr) {
      // A label joins paths and a block is a scope of its own; declarations change nothing.
      if (!std::holds_alternative<RegDecl>(statements[i].value) &&
          !std::holds_alternative<Directive>(statements[i].value)) {
        close_all();
      }
      continue;
    }
    if (std::optional<size_t> index = address_operand(*inst)) {
      const Operand& base = inst->operands[*index].elements[0];
      auto it = open.find(base.name);
      if (it != open.end() && (std::max(it->second.max_offset, base.offset) -
                                   std::min(it->second.min_offset, base.offset) >
                               kMaxSpanBytes)) {
        it = close(it);
        it = open.end();
      }
      if (it == open.end()) {
        it = open.emplace(base.name, SpanGroup{base.name, {}, base.offset, base.offset, 0}).first;
      }
      it->second.members.push_back(i);
      it->second.min_offset = std::min(it->second.min_offset, base.offset);
      it->second.max_offset = std::max(it->second.max_offset, base.offset);
    }
    // A register the instruction writes (or reads: telling them apart is not needed) ends its
    // group after this instruction, which itself still uses the value checked.
    ForEachNameOutsideAddresses(*inst, [&](const std::string& name) {
      if (auto it = open.find(name); it != open.end()) close(it);
    });
    if (TransfersControl(*inst)) close_all();
  }
  close_all();
  plan.slots = AssignSlots(plan.groups);
  plan.group_of.assign(statements.size(), SpanPlan::kNone);
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    for (size_t member : plan.groups[g].members) plan.group_of[member] = g;
  }
  return plan;
}

}  // namespace tally::ptx::passes
