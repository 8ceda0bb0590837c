// Addresses made from the module's own `.global` variables (fence_memory.cc): which accesses
// provably stay inside one, and which registers hold addresses computed from one.
//
// The server puts every variable of a fenced module in range 2 (module_registry.cc's
// VariableRangeOf), so an access whose start lies inside a variable cannot fail its check, and
// the check is left out (as for accesses by the variable's name). A register holds `var + c`
// where, in one statement list, it was set by `mov.u64 %r, var;` or from such a register by
// `mov`, `cvta.global`, `cvta.to.global` (the same object's generic or global address) or
// `add`/`sub` of an immediate, unguarded, with nothing between that could change it or join
// another path: no label (a branch could arrive there with any value in the register), no
// declaration of the name (an inner block's register of that name is another, uninitialised
// one), no other write of it. A nested block starts with what holds before it; after it nothing
// is known. Where the start `var + c + offset` lies in [var, var + size) the access needs no
// check: accesses are naturally aligned and at most 256 bytes, so the access ends in the same
// 256-byte block of range 2 (fence_memory.h).
//
// A register computed from a variable's address in any other way (an index added, the value
// taken on another path) most likely points into the variable too: its check compares with
// range 2 first, which is only an order, not a proof (every range is still compared).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"

namespace tally::ptx::passes {

struct VariableAddresses {
  // The accesses of the body whose start provably lies inside a module variable.
  std::set<const Instruction*> proven;
  // Registers that some instruction of the body computes from a module variable's address.
  std::set<std::string> derived;
  // Whether an access outside `proven` goes through a register of `derived`.
  bool derived_access = false;
};

// `variable_bytes(name)`: the bytes of the module `.global` variable the function means by
// `name`, 0 when it means none (a register, its own variable, an extern or unsized one).
// `address_operand(inst)`: the index of the address operand the fence checks (an address
// `[base+offset]`, or a register whose value is the address), empty when it checks none.
VariableAddresses FindVariableAddresses(
    const std::vector<Statement>& body,
    const std::function<uint64_t(const std::string&)>& variable_bytes,
    const std::function<std::optional<size_t>(const Instruction&)>& address_operand);

}  // namespace tally::ptx::passes
