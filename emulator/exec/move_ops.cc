// Data movement: mov, its vector forms (mov.b64 d, {a, b} packs pieces into one register, mov.b64
// {a, b}, s unpacks them) and the clocks that mov reads at execution time (%clock, %clock_hi,
// %clock64, %globaltimer and its halves).
#include <chrono>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

int64_t NowNs(bool wall) {
  auto now = wall ? std::chrono::system_clock::now().time_since_epoch()
                  : std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
}

}  // namespace

void Block::ExecuteMove(const Inst& in, Warp& warp, uint32_t mask) {
  const Operands r(in, warp.regs);
  uint64_t* d = r.d;
  const uint64_t* a = r.a;
  const int width = TypeBits(in.type);
  switch (in.op) {
    case Op::kMov: {
      const uint64_t wm = WidthMask(width);
      ForLanes(mask, [&](int l) { d[l] = a[l] & wm; });
      break;
    }
    case Op::kPack: {
      int piece = width / in.vec;
      ForLanes(mask, [&](int l) {
        uint64_t value = 0;
        for (int i = 0; i < in.vec; ++i) {
          value |= (TALLY_R(in.src[i])[l] & WidthMask(piece)) << (i * piece);
        }
        d[l] = value;
      });
      break;
    }
    case Op::kUnpack: {
      int piece = width / in.vec;
      ForLanes(mask, [&](int l) {
        uint64_t value = a[l];
        for (int i = 0; i < in.vec; ++i) {
          TALLY_R(in.dst[i])[l] = (value >> (i * piece)) & WidthMask(piece);
        }
      });
      break;
    }
    default: {  // kClock
      const auto read = static_cast<ClockRead>(in.mod);
      const uint64_t now = static_cast<uint64_t>(NowNs(read >= ClockRead::kTimerLo));
      const uint64_t value =
          read == ClockRead::kClock || read == ClockRead::kTimerLo     ? now & 0xffffffff
          : read == ClockRead::kClockHi || read == ClockRead::kTimerHi ? now >> 32
                                                                       : now;
      ForLanes(mask, [&](int l) { d[l] = value; });
      break;
    }
  }
}

}  // namespace tally::emu::exec
