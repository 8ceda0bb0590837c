// f32/f64 functions: rcp, sqrt, rsqrt, sin, cos, ex2, lg2, tanh (the correctly rounded host
// results, also for their .approx forms; rounding per .rn/.rz/.rm/.rp, the file compiled with
// -frounding-math) and copysign.
#include <cmath>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {

void Block::ExecuteFloatFunction(const Inst& in, Warp& warp, uint32_t mask) {
  const Operands r(in, warp.regs);
  switch (in.op) {
    case Op::kCopysign: {
      // d = b with the sign of a (PTX ISA, "copysign").
      const int width = TypeBits(in.type);
      const uint64_t wm = WidthMask(width), sign = 1ull << (width - 1);
      ForLanes(mask, [&](int l) { r.d[l] = ((r.b[l] & ~sign) | (r.a[l] & sign)) & wm; });
      break;
    }
    case Op::kRcp:
      FloatLanes<1>(in, mask, r, [](auto x) { return decltype(x)(1) / x; });
      break;
    case Op::kSqrt:
      FloatLanes<1>(in, mask, r, [](auto x) { return std::sqrt(x); });
      break;
    case Op::kRsqrt:
      FloatLanes<1>(in, mask, r, [](auto x) { return decltype(x)(1) / std::sqrt(x); });
      break;
    case Op::kSin:
      FloatLanes<1>(in, mask, r, [](auto x) { return std::sin(x); });
      break;
    case Op::kCos:
      FloatLanes<1>(in, mask, r, [](auto x) { return std::cos(x); });
      break;
    case Op::kEx2:
      FloatLanes<1>(in, mask, r, [](auto x) { return std::exp2(x); });
      break;
    case Op::kLg2:
      FloatLanes<1>(in, mask, r, [](auto x) { return std::log2(x); });
      break;
    default:  // kTanh
      FloatLanes<1>(in, mask, r, [](auto x) { return std::tanh(x); });
      break;
  }
}

}  // namespace tally::emu::exec
