// Integer operations on lanes narrower than a register: the 24-bit multiplies mul24/mad24, the
// byte and halfword dot products dp4a/dp2a, and the SIMD video instructions vadd/vsub/vavrg/
// vabsdiff/vmin/vmax on 2 halfwords or 4 bytes (what nvcc emits for __vabsdiffu4 & co.).
#include <algorithm>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

// Element `index` of `bits` bits of a 32-bit value, sign- or zero-extended.
int64_t Element(uint64_t value, int index, int bits, bool is_signed) {
  uint64_t raw = (value >> (index * bits)) & WidthMask(bits);
  return is_signed ? ReadSigned(raw, bits) : static_cast<int64_t>(raw);
}

// mul24/mad24 (PTX ISA, "mul24", "mad24"): the 48-bit product of the low 24 bits of a and b
// (sign-extended for .s32); .lo keeps bits 31..0, .hi bits 47..16. mad24 adds c to that, with
// .sat (only .hi.s32) clamping the sum to the s32 range.
uint64_t Mul24(uint64_t a, uint64_t b, const uint64_t* c, bool hi, bool is_signed, bool sat) {
  int64_t x = Element(a, 0, 24, is_signed), y = Element(b, 0, 24, is_signed);
  uint64_t product = static_cast<uint64_t>(x * y);
  uint64_t part = (hi ? product >> 16 : product) & 0xffffffffu;
  if (c == nullptr) return part;
  if (sat) {
    int64_t sum = ReadSigned(part, 32) + ReadSigned(*c, 32);
    return static_cast<uint32_t>(std::clamp<int64_t>(sum, INT32_MIN, INT32_MAX));
  }
  return (part + *c) & 0xffffffffu;
}

// dp4a: c + the sum of the products of a's and b's bytes; dp2a: c + the products of a's two
// halfwords with b's bytes 0, 1 (.lo) or 2, 3 (.hi) (PTX ISA, "dp4a", "dp2a"). The sum wraps
// to 32 bits.
uint64_t Dot(DotMode mode, uint64_t a, uint64_t b, uint64_t c, bool signed_a, bool signed_b) {
  uint64_t sum = c;
  if (mode == DotMode::k4) {
    for (int i = 0; i < 4; ++i) {
      sum += static_cast<uint64_t>(Element(a, i, 8, signed_a) * Element(b, i, 8, signed_b));
    }
  } else {
    int first = mode == DotMode::k2Lo ? 0 : 2;
    for (int i = 0; i < 2; ++i) {
      sum += static_cast<uint64_t>(Element(a, i, 16, signed_a) *
                                   Element(b, first + i, 8, signed_b));
    }
  }
  return sum & 0xffffffffu;
}

// vop2/vop4 with the default selectors (a's and b's own lanes) and mask (every lane): each
// lane's result, saturated to the destination lane's range with .sat, either replaces the lane
// (SIMD merge) or is added to c (.add) (PTX ISA, "SIMD Video Instructions").
uint64_t Video(VideoOp op, int lanes, uint8_t flags, bool sat, uint64_t a, uint64_t b,
               uint64_t c) {
  const int bits = 32 / lanes;
  const bool signed_d = flags & kVideoSignedD;
  const int64_t lo = signed_d ? -(int64_t{1} << (bits - 1)) : 0;
  const int64_t hi = signed_d ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  uint64_t merged = 0, sum = c;
  for (int i = 0; i < lanes; ++i) {
    int64_t x = Element(a, i, bits, flags & kVideoSignedA);
    int64_t y = Element(b, i, bits, flags & kVideoSignedB);
    int64_t t = 0;
    switch (op) {
      case VideoOp::kAdd:
        t = x + y;
        break;
      case VideoOp::kSub:
        t = x - y;
        break;
      case VideoOp::kAvrg:  // halves round away from zero
        t = x + y >= 0 ? (x + y + 1) >> 1 : (x + y) >> 1;
        break;
      case VideoOp::kAbsdiff:
        t = x > y ? x - y : y - x;
        break;
      case VideoOp::kMin:
        t = std::min(x, y);
        break;
      case VideoOp::kMax:
        t = std::max(x, y);
        break;
    }
    if (sat) t = std::clamp(t, lo, hi);
    sum += static_cast<uint64_t>(t);
    merged |= (static_cast<uint64_t>(t) & WidthMask(bits)) << (i * bits);
  }
  return ((flags & kVideoAdd) ? sum : merged) & 0xffffffffu;
}

}  // namespace

void Block::ExecuteNarrowInt(const Inst& in, Warp& warp, uint32_t mask) {
  uint64_t* d = TALLY_R(in.dst[0]);
  const uint64_t* a = TALLY_R(in.src[0]);
  const uint64_t* b = TALLY_R(in.src[1]);
  const uint64_t* c = in.src[2] != kNoSlot ? TALLY_R(in.src[2]) : nullptr;
  const bool sat = in.flags & kFlagSat;
  switch (in.op) {
    case Op::kMul24: {
      const bool hi = in.mod == 1, is_signed = IsSigned(in.type);
      ForLanes(mask, [&](int l) {
        d[l] = Mul24(a[l], b[l], c != nullptr ? &c[l] : nullptr, hi, is_signed, sat);
      });
      break;
    }
    case Op::kDot: {
      const DotMode mode = static_cast<DotMode>(in.mod);
      const bool signed_a = IsSigned(in.type), signed_b = IsSigned(in.type2);
      ForLanes(mask, [&](int l) { d[l] = Dot(mode, a[l], b[l], c[l], signed_a, signed_b); });
      break;
    }
    default: {
      const VideoOp op = static_cast<VideoOp>(in.mod);
      ForLanes(mask,
               [&](int l) { d[l] = Video(op, in.vec, in.mod2, sat, a[l], b[l], c[l]); });
      break;
    }
  }
}

}  // namespace tally::emu::exec
