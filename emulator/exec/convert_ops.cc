// Conversions and address spaces: cvt between the integer and f32/f64 types (rounding per
// .rn/.rz/.rm/.rp and the integer modes .rni/.rzi/.rmi/.rpi, .ftz, .sat; the file is compiled
// with -frounding-math), cvta to and from generic addresses, and isspacep. Conversions with an
// f16/bf16 side are half_ops.cc's.
#include <cmath>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {

void Block::ExecuteConvert(const Inst& in, Warp& warp, uint32_t mask) {
  const Operands r(in, warp.regs);
  uint64_t* d = r.d;
  const uint64_t* a = r.a;
  switch (in.op) {
    case Op::kCvt: {
      const Type from = in.type2;
      const Rounding rounding = static_cast<Rounding>(in.mod2);
      const bool from_float = IsFloat(from), to_float = IsFloat(in.type);
      const FloatModes modes(in);
      RoundingScope scope(from_float && to_float ? in.mod2 : 0);
      ForLanes(mask, [&](int l) {
        if (!from_float && !to_float) {
          d[l] = IntToInt(a[l], from, in.type, modes.sat);
          return;
        }
        if (!from_float) {  // integer -> float, rounded per .rn/.rz/.rm/.rp
          RoundingScope int_rounding(in.mod2);
          uint64_t value = ReadInt(a[l], from);
          if (in.type == Type::kF64) {
            d[l] = modes.Out(IsSigned(from) ? static_cast<double>(static_cast<int64_t>(value))
                                            : static_cast<double>(value));
          } else {
            d[l] = modes.Out(IsSigned(from) ? static_cast<float>(static_cast<int64_t>(value))
                                            : static_cast<float>(value));
          }
          return;
        }
        double value = from == Type::kF64
                           ? AsF64(a[l])
                           : static_cast<double>(modes.ftz ? Ftz(AsF32(a[l])) : AsF32(a[l]));
        if (!to_float) {
          d[l] = FloatToInt(value, rounding, in.type);
          return;
        }
        // Integer rounding modes on float -> float round to an integral value.
        value = RoundIntegral(value, rounding);
        d[l] = in.type == Type::kF64 ? modes.Out(value) : modes.Out(static_cast<float>(value));
      });
      break;
    }
    case Op::kCvta: {
      const uint64_t wm = WidthMask(TypeBits(in.type));
      const uint64_t window = in.space == Space::kShared  ? kSharedWindow
                              : in.space == Space::kLocal ? kLocalWindow
                                                          : 0;
      const bool to_generic = in.flags & kFlagToGeneric;
      ForLanes(mask, [&](int l) { d[l] = (to_generic ? a[l] + window : a[l] - window) & wm; });
      break;
    }
    default: {  // kIsspacep
      auto in_window = [](uint64_t address, uint64_t window) {
        return address - window < kWindowSize;
      };
      ForLanes(mask, [&](int l) {
        bool shared = in_window(a[l], kSharedWindow), local = in_window(a[l], kLocalWindow),
             param = in_window(a[l], kParamWindow);
        switch (in.space) {
          case Space::kShared: {
            // .shared::cta: the executing CTA's window (its own or its mapa'd addresses);
            // .shared::cluster (mod 1): any CTA's of the cluster.
            const uint32_t tag = static_cast<uint32_t>(a[l] - kSharedWindow) >> kClusterRankShift;
            d[l] = shared && (in.mod == 1 || tag == 0 || tag == cluster_rank_ + 1);
            break;
          }
          case Space::kLocal:
            d[l] = local;
            break;
          case Space::kParam:
            d[l] = param;
            break;
          default:
            d[l] = !shared && !local && !param;
            break;
        }
      });
      break;
    }
  }
}

}  // namespace tally::emu::exec
