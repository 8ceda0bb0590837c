// Logic, shifts and bit fields on integers: and, or, xor, not, cnot, shl, shr, popc, clz, brev,
// bfe, bfi, bfind, prmt, shf (funnel shifts) and lop3 (any logic function of three inputs).
#include <algorithm>
#include <bit>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {

void Block::ExecuteBits(const Inst& in, Warp& warp, uint32_t mask) {
  const Operands r(in, warp.regs);
  uint64_t* d = r.d;
  const uint64_t *a = r.a, *b = r.b, *c = r.c;
  const int width = TypeBits(in.type);
  const uint64_t wm = WidthMask(width);
  switch (in.op) {
    case Op::kAnd:
      ForLanes(mask, [&](int l) { d[l] = a[l] & b[l] & wm; });
      break;
    case Op::kOr:
      ForLanes(mask, [&](int l) { d[l] = (a[l] | b[l]) & wm; });
      break;
    case Op::kXor:
      ForLanes(mask, [&](int l) { d[l] = (a[l] ^ b[l]) & wm; });
      break;
    case Op::kNot:
      ForLanes(mask, [&](int l) { d[l] = ~a[l] & wm; });
      break;
    case Op::kCnot:
      ForLanes(mask, [&](int l) { d[l] = (a[l] & wm) == 0 ? 1 : 0; });
      break;
    case Op::kShl:
      ForLanes(mask, [&](int l) {
        uint64_t n = b[l] & 0xffffffffu;
        d[l] = n >= static_cast<uint64_t>(width) ? 0 : (a[l] << n) & wm;
      });
      break;
    case Op::kShr: {
      const bool arithmetic = IsSigned(in.type);
      ForLanes(mask, [&](int l) {
        uint64_t n = std::min<uint64_t>(b[l] & 0xffffffffu, width);
        if (arithmetic) {
          d[l] = static_cast<uint64_t>(ReadSigned(a[l], width) >> std::min<uint64_t>(n, 63)) & wm;
        } else {
          d[l] = n >= static_cast<uint64_t>(width) ? 0 : (a[l] & wm) >> n;
        }
      });
      break;
    }
    case Op::kPopc:
      ForLanes(mask, [&](int l) { d[l] = std::popcount(a[l] & wm); });
      break;
    case Op::kClz:
      ForLanes(mask, [&](int l) { d[l] = width - std::bit_width(a[l] & wm); });
      break;
    case Op::kBrev:
      ForLanes(mask, [&](int l) { d[l] = ReverseBits(a[l], width); });
      break;
    case Op::kBfe:
      ForLanes(mask, [&](int l) {
        d[l] = BitFieldExtract(a[l], static_cast<uint32_t>(b[l]), static_cast<uint32_t>(c[l]),
                               in.type);
      });
      break;
    case Op::kBfi: {
      const uint64_t* e = TALLY_R(in.src[3]);
      ForLanes(mask, [&](int l) {
        d[l] = BitFieldInsert(a[l], b[l], static_cast<uint32_t>(c[l]), static_cast<uint32_t>(e[l]),
                              width);
      });
      break;
    }
    case Op::kBfind: {
      // Position of the most significant bit that differs from the sign (a set bit for
      // unsigned types); 0xffffffff when there is none (PTX ISA, "bfind").
      const bool shift_amount = in.mod == 1;
      ForLanes(mask, [&](int l) {
        uint64_t value = a[l] & wm;
        if (IsSigned(in.type) && ReadSigned(value, width) < 0) value = ~value & wm;
        if (value == 0) {
          d[l] = 0xffffffffu;
          return;
        }
        uint32_t position = std::bit_width(value) - 1;
        d[l] = shift_amount ? width - 1 - position : position;
      });
      break;
    }
    case Op::kPrmt:
      ForLanes(mask, [&](int l) { d[l] = Permute(a[l], b[l], c[l]); });
      break;
    case Op::kShf: {
      // Funnel shift of the 64-bit {b, a} (PTX ISA, "shf"): .l keeps the upper, .r the
      // lower 32 bits; .wrap takes the amount mod 32, .clamp caps it at 32.
      const bool right = in.mod & 1, clamp = in.mod & 2;
      ForLanes(mask, [&](int l) {
        uint64_t n = clamp ? std::min<uint64_t>(c[l] & 0xffffffffu, 32) : c[l] & 31;
        uint64_t both = (b[l] & 0xffffffffu) << 32 | (a[l] & 0xffffffffu);
        d[l] = right ? (both >> n) & 0xffffffffu : ((both << n) >> 32) & 0xffffffffu;
      });
      break;
    }
    default: {  // kLop3
      // Any logic function of three inputs, given as the truth table `lut` indexed by
      // (a << 2 | b << 1 | c) for each bit (PTX ISA, "lop3").
      const uint64_t* lut = TALLY_R(in.src[3]);
      ForLanes(mask, [&](int l) {
        uint64_t result = 0;
        for (int term = 0; term < 8; ++term) {
          if (((lut[l] >> term) & 1) == 0) continue;
          result |= ((term & 4) ? a[l] : ~a[l]) & ((term & 2) ? b[l] : ~b[l]) &
                    ((term & 1) ? c[l] : ~c[l]);
        }
        d[l] = result & wm;
      });
      break;
    }
  }
}

}  // namespace tally::emu::exec
