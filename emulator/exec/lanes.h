// Lane iteration and type dispatch shared by the interpreter's instruction groups (warp.cc,
// memory_ops.cc, collective_ops.cc).
#pragma once

#include <bit>
#include <cfenv>
#include <cstdint>

#include "emulator/exec/alu.h"
#include "emulator/exec/program.h"

namespace tally::emu::exec {

// Calls fn(lane) for every lane in `mask` (a straight loop when all 32 are set).
template <typename Fn>
inline void ForLanes(uint32_t mask, Fn fn) {
  if (mask == 0xffffffffu) {
    for (int lane = 0; lane < 32; ++lane) fn(lane);
  } else {
    for (; mask != 0; mask &= mask - 1) fn(std::countr_zero(mask));
  }
}

template <typename Fn>
inline void DispatchInt(Type type, Fn fn) {
  switch (type) {
    case Type::kS8:
      return fn(int8_t{});
    case Type::kS16:
      return fn(int16_t{});
    case Type::kS32:
      return fn(int32_t{});
    case Type::kS64:
      return fn(int64_t{});
    case Type::kU8:
    case Type::kB8:
      return fn(uint8_t{});
    case Type::kU16:
    case Type::kB16:
      return fn(uint16_t{});
    case Type::kU64:
    case Type::kB64:
      return fn(uint64_t{});
    default:
      return fn(uint32_t{});
  }
}

template <typename Fn>
inline void DispatchFloat(Type type, Fn fn) {
  if (type == Type::kF64) return fn(double{});
  return fn(float{});
}

template <typename F>
inline F FromBits(uint64_t bits) {
  if constexpr (sizeof(F) == 4)
    return AsF32(bits);
  else
    return AsF64(bits);
}

// Directed rounding for one instruction (.rz/.rm/.rp); .rn is the host default.
class RoundingScope {
 public:
  explicit RoundingScope(uint8_t rounding) {
    int mode = rounding == static_cast<uint8_t>(Rounding::kRz)   ? FE_TOWARDZERO
               : rounding == static_cast<uint8_t>(Rounding::kRm) ? FE_DOWNWARD
               : rounding == static_cast<uint8_t>(Rounding::kRp) ? FE_UPWARD
                                                                 : -1;
    if (mode != -1) {
      saved_ = std::fegetround();
      std::fesetround(mode);
    }
  }
  ~RoundingScope() {
    if (saved_ != -1) std::fesetround(saved_);
  }

 private:
  int saved_ = -1;
};

inline uint64_t ReverseBits(uint64_t value, int width) {
  uint64_t result = 0;
  for (int i = 0; i < width; ++i) result |= ((value >> i) & 1) << (width - 1 - i);
  return result;
}

// Register `slot` of a warp: 32 lanes.
#define TALLY_R(slot) (warp.regs + static_cast<uint64_t>(slot) * 32)

}  // namespace tally::emu::exec
