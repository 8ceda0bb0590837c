// Control flow and synchronisation: bra, brx.idx, call and ret (through call_ops.cc), exit,
// trap, the CTA barriers bar.sync/bar.arrive/bar.red, and membar/fence. Branches set the pc of
// the lanes that take them and reschedule the warp (min-PC scheduling, block.cc); a uniform
// branch that keeps the smallest pc just moves the warp's pc.
#include <atomic>
#include <bit>
#include <string>
#include <vector>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

std::atomic<uint32_t> g_fence_word{0};

// Parks the lanes of `lanes` at `pc`.
void SetPc(Warp& warp, uint32_t lanes, uint32_t pc) {
  for (uint32_t m = lanes; m != 0; m &= m - 1) warp.pc[std::countr_zero(m)] = pc;
}

}  // namespace

Flow Block::ExecuteControl(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  switch (in.op) {
    case Op::kBra: {
      const uint32_t stay = warp.active & ~mask;
      if (stay == 0 && in.target < warp.others_min) {
        warp.cur_pc = in.target;  // uniform branch, still the smallest pc: keep running
        return Flow::kJumped;
      }
      SetPc(warp, mask, in.target);
      SetPc(warp, stay, pc + 1);
      Schedule(warp);
      return Flow::kJumped;
    }
    case Op::kBrx: {
      // Each lane jumps to the entry of the target list its index selects.
      const std::vector<uint32_t>& table = function_->branch_tables[in.target];
      const uint64_t* a = TALLY_R(in.src[0]);
      for (uint32_t m = mask; m != 0; m &= m - 1) {
        int l = std::countr_zero(m);
        uint64_t index = a[l] & 0xffffffffu;
        if (index >= table.size()) {
          Fault(warp, l, pc, CUDA_ERROR_LAUNCH_FAILED,
                "brx.idx index " + std::to_string(index) + " outside its target list");
          return Flow::kFault;
        }
        warp.pc[l] = table[index];
      }
      SetPc(warp, warp.active & ~mask, pc + 1);
      Schedule(warp);
      return Flow::kJumped;
    }
    case Op::kCall:
    case Op::kRet: {
      const bool ok =
          in.op == Op::kCall ? ExecuteCall(in, warp, mask, pc) : ExecuteReturn(in, warp, mask, pc);
      if (!ok) return Flow::kFault;
      Schedule(warp);
      return Flow::kJumped;
    }
    case Op::kExit:
      warp.live &= ~mask;
      warp.active &= ~mask;
      exited_ += std::popcount(mask);
      return Flow::kNext;
    case Op::kTrap:
      Fault(warp, std::countr_zero(mask), pc, CUDA_ERROR_LAUNCH_FAILED, "trap");
      return Flow::kFault;
    case Op::kFence:
      // A sequentially consistent read-modify-write on one shared word: a full fence on
      // the host that ThreadSanitizer also understands (it does not model bare fences).
      g_fence_word.fetch_add(0, std::memory_order_seq_cst);
      return Flow::kNext;
    default: {  // kBarSync, kBarArrive, kBarRed
      const Operands r(in, warp.regs);
      int first = std::countr_zero(mask);
      uint64_t barrier = r.a[first];
      uint64_t count = r.b != nullptr ? r.b[first] : 0;
      if (barrier >= 16) {
        Fault(warp, first, pc, CUDA_ERROR_LAUNCH_FAILED, "barrier id out of range");
        return Flow::kFault;
      }
      bool wait = in.op != Op::kBarArrive;
      if (in.op == Op::kBarRed) {
        const uint64_t want = (in.flags & kFlagNegateSrcB) ? 0 : 1;
        uint32_t votes = 0;
        ForLanes(mask, [&](int l) { votes |= static_cast<uint32_t>((r.c[l] & 1) == want) << l; });
        ArriveReduce(warp, mask, static_cast<uint32_t>(barrier), static_cast<uint32_t>(count),
                     votes, static_cast<BarRedMode>(in.mod), in.dst[0]);
      } else {
        Arrive(warp, mask, static_cast<uint32_t>(barrier), static_cast<uint32_t>(count), wait);
      }
      if (wait) {
        SetPc(warp, mask, pc + 1);
        warp.active &= ~mask;
      }
      return Flow::kNext;
    }
  }
}

}  // namespace tally::emu::exec
