// Flattening of nested `{ }` blocks. nvcc wraps __syncthreads_count/and/or (and user inline
// PTX) in blocks with their own register declarations; the unified synchronisation point can
// only resume at labels of the kernel's outer scope, so such blocks are spliced into the body.
// Names declared in a block shadow outer ones, so each gets a fresh name first:
//
//   {                                   .reg .pred %p1__tally_1;
//     .reg .pred %p1;                   setp.ne.u32 %p1__tally_1, %r23, 0;
//     setp.ne.u32 %p1, %r23, 0;    ->   bar.red.popc.u32 %r2, 0, %p1__tally_1;
//     bar.red.popc.u32 %r2, 0, %p1;
//   }
#include <map>

#include "ptx_transform/passes/ir_walk.h"
#include "ptx_transform/passes/passes.h"

namespace tally::ptx::passes {
namespace {

struct Renaming {
  std::map<std::string, std::string> names;                        // plain names
  std::map<std::string, std::pair<std::string, uint32_t>> ranges;  // `%r<4>` bases

  // The new name of `name`; `name` itself when the block does not declare it.
  std::string Apply(const std::string& name) const {
    if (auto it = names.find(name); it != names.end()) return it->second;
    // `%r3` of a `%r<4>` range: a base followed by a number below the count.
    size_t digits = name.find_last_not_of("0123456789");
    if (digits == std::string::npos || digits + 1 == name.size()) return name;
    auto range = ranges.find(name.substr(0, digits + 1));
    if (range == ranges.end()) return name;
    std::string index = name.substr(digits + 1);
    if (index.size() > 1 && index[0] == '0') return name;
    if (std::stoull(index) >= range->second.second) return name;
    return range->second.first + index;
  }
};

// Replaces the block at parent[index] by its statements; returns how many there were.
size_t FlattenAt(std::vector<Statement>& parent, size_t index, NameAllocator& names) {
  // Inner blocks first, so that their names are already unique here.
  Block block = std::move(std::get<Block>(parent[index].value));
  for (size_t i = 0; i < block.statements.size();) {
    if (std::holds_alternative<Block>(block.statements[i].value)) {
      i += FlattenAt(block.statements, i, names);
    } else {
      ++i;
    }
  }
  Renaming renaming;
  for (auto& s : block.statements) {
    if (auto* reg = std::get_if<RegDecl>(&s.value)) {
      for (auto& entry : reg->entries) {
        std::string fresh = names.Fresh(entry.name + "__tally");
        if (entry.count) {
          renaming.ranges[entry.name] = {fresh, *entry.count};
        } else {
          renaming.names[entry.name] = fresh;
        }
        entry.name = fresh;
      }
    } else if (auto* label = std::get_if<Label>(&s.value)) {
      label->name = renaming.names[label->name] = names.Fresh(label->name + "__tally");
    } else if (auto* var = std::get_if<Box<VarDecl>>(&s.value)) {
      (*var)->name = renaming.names[(*var)->name] = names.Fresh((*var)->name + "__tally");
    }
  }
  ForEachInstruction(block.statements, [&](Instruction& inst) {
    if (!inst.guard.empty()) inst.guard = renaming.Apply(inst.guard);
    ForEachOperand(inst, [&](Operand& op) {
      if (op.kind == Operand::Kind::kName) op.name = renaming.Apply(op.name);
    });
  });
  parent.erase(parent.begin() + static_cast<std::ptrdiff_t>(index));
  parent.insert(parent.begin() + static_cast<std::ptrdiff_t>(index),
                std::make_move_iterator(block.statements.begin()),
                std::make_move_iterator(block.statements.end()));
  return block.statements.size();
}

bool ContainsBarrier(const std::vector<Statement>& statements) {
  bool found = false;
  ForEachInstruction(statements, [&](const Instruction& inst) {
    found |= inst.opcode == "bar" || inst.opcode == "barrier";
  });
  return found;
}

}  // namespace

void FlattenBlocksWithBarriers(std::vector<Statement>& body, NameAllocator& names) {
  for (size_t i = 0; i < body.size();) {
    const auto* block = std::get_if<Block>(&body[i].value);
    if (block != nullptr && ContainsBarrier(block->statements)) {
      i += FlattenAt(body, i, names);
    } else {
      ++i;
    }
  }
}

}  // namespace tally::ptx::passes
