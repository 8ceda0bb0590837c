// Comparisons and selection on integers and f32/f64: setp (every comparison, the optional
// combination with a predicate, and the complement in a second destination) and selp. setp on
// f16/bf16 and set are half_ops.cc's.
#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {

void Block::ExecuteCompare(const Inst& in, Warp& warp, uint32_t mask) {
  const Operands r(in, warp.regs);
  uint64_t* d = r.d;
  const uint64_t *a = r.a, *b = r.b, *c = r.c;
  const int width = TypeBits(in.type);
  const uint64_t wm = WidthMask(width);
  if (in.op == Op::kSelp) {
    ForLanes(mask, [&](int l) { d[l] = (c[l] & 1) ? a[l] & wm : b[l] & wm; });
    return;
  }
  // kSetp (PTX ISA, "setp"): p = (a cmp b) bop c, q = !(a cmp b) bop c.
  const bool is_float = IsFloat(in.type);
  const bool ftz = in.flags & kFlagFtz;
  const CmpOp cmp = static_cast<CmpOp>(in.mod);
  const BoolOp bop = static_cast<BoolOp>(in.mod2);
  const uint64_t negate_c = (in.flags & kFlagNegateSrcB) ? 1 : 0;
  uint64_t* q = in.dst[1] != kNoSlot ? TALLY_R(in.dst[1]) : nullptr;
  ForLanes(mask, [&](int l) {
    bool result;
    if (is_float) {
      result = in.type == Type::kF64 ? CompareFloat(cmp, AsF64(a[l]), AsF64(b[l]))
                                     : CompareFloat(cmp, ftz ? Ftz(AsF32(a[l])) : AsF32(a[l]),
                                                    ftz ? Ftz(AsF32(b[l])) : AsF32(b[l]));
    } else if (IsSigned(in.type)) {
      result = CompareInt(cmp, ReadSigned(a[l], width), ReadSigned(b[l], width));
    } else {
      result = CompareInt(cmp, a[l] & wm, b[l] & wm);
    }
    auto combine = [&](bool value) -> uint64_t {
      if (bop == BoolOp::kNone) return value;
      bool other = ((c[l] & 1) ^ negate_c) != 0;
      return bop == BoolOp::kAnd  ? (value && other)
             : bop == BoolOp::kOr ? (value || other)
                                  : (value != other);
    };
    uint64_t p = combine(result);
    uint64_t np = combine(!result);
    d[l] = p;
    if (q != nullptr) q[l] = np;
  });
}

}  // namespace tally::emu::exec
