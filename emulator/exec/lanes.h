// Lane iteration, operand access and type dispatch shared by the interpreter's instruction
// families (the *_ops.cc files that warp.cc dispatches to).
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

// The registers of an instruction's first destination and first three sources, nullptr where
// the instruction has none; `regs` is the warp's register file.
struct Operands {
  Operands(const Inst& in, uint64_t* regs)
      : d(Slot(regs, in.dst[0])),
        a(Slot(regs, in.src[0])),
        b(Slot(regs, in.src[1])),
        c(Slot(regs, in.src[2])) {}
  static uint64_t* Slot(uint64_t* regs, uint32_t slot) {
    return slot != kNoSlot ? regs + static_cast<uint64_t>(slot) * 32 : nullptr;
  }
  uint64_t* d;
  const uint64_t *a, *b, *c;
};

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

// .ftz and .sat of one f32/f64 instruction, copied out of the Inst so that lane loops keep them
// in registers: .ftz flushes subnormal f32 operands and results, .sat clamps results to [0, 1].
struct FloatModes {
  explicit FloatModes(const Inst& in) : ftz(in.flags & kFlagFtz), sat(in.flags & kFlagSat) {}
  template <typename F>
  F In(uint64_t bits) const {
    F value = FromBits<F>(bits);
    if constexpr (sizeof(F) == 4) {
      if (ftz) value = Ftz(value);
    }
    return value;
  }
  template <typename F>
  uint64_t Out(F value) const {
    if constexpr (sizeof(F) == 4) {
      if (ftz) value = Ftz(value);
    }
    if (sat) value = SaturateUnit(value);
    return Bits(value);
  }
  bool ftz, sat;
};

// d = op(a), op(a, b) or op(a, b, c) (`sources`) on every lane in the instruction's float type,
// rounded per its .rn/.rz/.rm/.rp (callers are compiled with -frounding-math), with .ftz and .sat.
template <int sources, typename Fn>
inline void FloatLanes(const Inst& in, uint32_t mask, const Operands& r, Fn op) {
  RoundingScope rounding(in.mod2);
  const FloatModes modes(in);
  uint64_t* d = r.d;
  const uint64_t *a = r.a, *b = r.b, *c = r.c;
  DispatchFloat(in.type, [&](auto t) {
    using F = decltype(t);
    ForLanes(mask, [&](int l) {
      if constexpr (sources == 1) {
        d[l] = modes.Out(op(modes.In<F>(a[l])));
      } else if constexpr (sources == 2) {
        d[l] = modes.Out(op(modes.In<F>(a[l]), modes.In<F>(b[l])));
      } else {
        d[l] = modes.Out(op(modes.In<F>(a[l]), modes.In<F>(b[l]), modes.In<F>(c[l])));
      }
    });
  });
}

inline uint64_t ReverseBits(uint64_t value, int width) {
  uint64_t result = 0;
  for (int i = 0; i < width; ++i) result |= ((value >> i) & 1) << (width - 1 - i);
  return result;
}

// Register `slot` of a warp: 32 lanes.
#define TALLY_R(slot) (warp.regs + static_cast<uint64_t>(slot) * 32)

}  // namespace tally::emu::exec
