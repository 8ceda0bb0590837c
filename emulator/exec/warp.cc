// The interpreter: runs one warp's lanes that share the smallest program counter together
// (per-lane PCs reconverge structured code at its join points and handle arbitrary branches),
// one decoded instruction at a time over all active lanes. Each instruction goes to its
// family's Block::Execute* (opcodes.def names the family of every operation, one file per
// family). No allocation or lookup by name happens here; registers are slot-major arrays of 32
// lanes.
#include <bit>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

enum class Family : uint8_t {
  kNone,
  kMove,
  kConvert,
  kCompare,
  kHalf,
  kArithmetic,
  kBits,
  kNarrowInt,
  kFloatFunction,
  kMemory,
  kAsync,
  kTexture,
  kCollective,
  kMatrix,
  kCluster,
  kBuiltin,
  kControl,
};

// The family of each Op, in Op's order.
constexpr Family kFamilies[] = {
#define TALLY_OP(name, family) Family::k##family,
#include "emulator/exec/opcodes.def"
};

Flow Checked(bool ok) { return ok ? Flow::kNext : Flow::kFault; }

}  // namespace

WarpStatus Block::RunWarp(Warp& warp, uint32_t budget) {
  const Inst* const code = function_->code.data();
  Schedule(warp);
  // Parks the active lanes at `pc` and picks the next group of lanes to run.
  auto reschedule = [&](uint32_t pc) {
    for (uint32_t m = warp.active; m != 0; m &= m - 1) warp.pc[std::countr_zero(m)] = pc;
    Schedule(warp);
  };
  while (warp.active != 0) {
    if (budget-- == 0) {
      reschedule(warp.cur_pc);
      warp.active = 0;
      return WarpStatus::kYielded;
    }
    const uint32_t pc = warp.cur_pc;
    const Inst& in = code[pc];
    uint32_t mask = warp.active;
    lane_instructions_ += std::popcount(mask);
    if (in.guard != kNoSlot) {
      const uint64_t* guard = TALLY_R(in.guard);
      const uint64_t want = (in.flags & kFlagNegateGuard) ? 0 : 1;
      uint32_t taken = 0;
      ForLanes(mask, [&](int l) { taken |= static_cast<uint32_t>((guard[l] & 1) == want) << l; });
      mask = taken;
    }
    if (mask != 0) {
      Flow flow = Flow::kNext;
      switch (kFamilies[static_cast<uint8_t>(in.op)]) {
        case Family::kNone:
          break;
        case Family::kMove:
          ExecuteMove(in, warp, mask);
          break;
        case Family::kConvert:
          ExecuteConvert(in, warp, mask);
          break;
        case Family::kCompare:
          ExecuteCompare(in, warp, mask);
          break;
        case Family::kHalf:
          ExecuteHalf(in, warp, mask);
          break;
        case Family::kArithmetic:
          ExecuteArithmetic(in, warp, mask);
          break;
        case Family::kBits:
          ExecuteBits(in, warp, mask);
          break;
        case Family::kNarrowInt:
          ExecuteNarrowInt(in, warp, mask);
          break;
        case Family::kFloatFunction:
          ExecuteFloatFunction(in, warp, mask);
          break;
        case Family::kCollective:
          ExecuteCollective(in, warp, mask);
          break;
        case Family::kMemory:
          flow = Checked(ExecuteMemory(in, warp, mask, pc));
          break;
        case Family::kAsync:
          flow = Checked(ExecuteAsync(in, warp, mask, pc));
          break;
        case Family::kTexture:
          flow = Checked(ExecuteTexture(in, warp, mask, pc));
          break;
        case Family::kMatrix:
          flow = Checked(ExecuteMatrix(in, warp, mask, pc));
          break;
        case Family::kCluster:
          flow = Checked(ExecuteCluster(in, warp, mask, pc));
          break;
        case Family::kBuiltin:
          flow = Checked(ExecuteBuiltin(in, warp, mask, pc));
          break;
        case Family::kControl:
          flow = ExecuteControl(in, warp, mask, pc);
          break;
      }
      if (flow == Flow::kFault) return WarpStatus::kFault;
      if (flow == Flow::kJumped) continue;
    }
    // Advance the lanes still active; merge with parked lanes that reached the same pc.
    if (warp.active == 0) {
      Schedule(warp);
      continue;
    }
    ++warp.cur_pc;
    if (warp.cur_pc >= warp.others_min) reschedule(warp.cur_pc);
  }
  return warp.live == 0 ? WarpStatus::kDone : WarpStatus::kWaiting;
}

#undef TALLY_R

}  // namespace tally::emu::exec
