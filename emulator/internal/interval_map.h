// Lookups in a std::map from the start of an address range to a value whose `size` member is the
// range's length, the ranges disjoint (allocations, mappings, reservations).
#pragma once

#include <cstdint>
#include <iterator>

namespace tally::emu {

// The entry whose range contains `address`, or map.end().
template <typename Map>
auto FindContaining(Map& map, uint64_t address) -> decltype(map.begin()) {
  auto it = map.upper_bound(address);
  if (it == map.begin()) return map.end();
  --it;
  if (address - it->first >= it->second.size) return map.end();
  return it;
}

// Whether some entry's range overlaps [base, base + size).
template <typename Map>
bool OverlapsAny(const Map& map, uint64_t base, uint64_t size) {
  auto next = map.lower_bound(base);
  if (next != map.end() && next->first - base < size) return true;
  return next != map.begin() && std::prev(next)->first + std::prev(next)->second.size > base;
}

}  // namespace tally::emu
