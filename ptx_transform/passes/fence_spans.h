// Accesses the fence checks together (fence_memory.cc): in straight-line code, unguarded global
// accesses through one base register that nothing redefines between them, at constant offsets
// that span at most kMaxSpanBytes, get one check of their lowest and highest start address
// instead of one check each.
//
// Why one check suffices: a range is an interval, so when the highest start H lies in range i
// with H - base_i >= D (D the span), every start in [H - D, H] does too, and each access, being
// naturally aligned and at most 256 bytes, ends in the same 256-byte block of that range (the
// argument for one access in fence_memory.h). The accesses of a group all execute when the first
// does (no label, branch, call or exit between them, none guarded), so checking them at the
// first raises the violation flag only for accesses that run. Accesses to one object always lie
// in one range (an allocation never straddles two); a group whose ends lie in two ranges is
// treated as a violation.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ptx_transform/ir.h"

namespace tally::ptx::passes {

// The redirected accesses of a violating group end within kMaxSpanBytes + 768 bytes of base[0],
// inside the 2 MiB granule the server maps there (as wmma tiles, at most 8 KiB, do).
constexpr int64_t kMaxSpanBytes = 4096;

// Accesses through one base register checked at once.
struct SpanGroup {
  std::string base;             // the base register
  std::vector<size_t> members;  // statement indices, ascending; at least two
  int64_t min_offset = 0, max_offset = 0;
  size_t slot = 0;  // which span register holds the checked base from the first member on
};

struct SpanPlan {
  std::vector<SpanGroup> groups;
  std::vector<size_t> group_of;  // per statement: index into groups, or kNone
  size_t slots = 0;              // span registers the groups need (reused once a group ends)
  static constexpr size_t kNone = static_cast<size_t>(-1);
};

// Groups the accesses among `statements` (one statement list, nested blocks excluded) for which
// `address_operand` answers the index of the checked address operand: callers answer only for
// unguarded global data accesses whose address is a register plus a constant.
SpanPlan PlanSpans(const std::vector<Statement>& statements,
                   const std::function<std::optional<size_t>(const Instruction&)>& address_operand);

}  // namespace tally::ptx::passes
