// Real calls (kCall / kRet) to the out-of-line functions of a kernel (lower.cc, call_graph.h).
//
// Each lane has a call stack in its local memory, after the kernel's own local variables. A
// call pushes, at the end of the caller's frame: a call record (call site, callee, caller's
// frame base), the callee's register window when the callee is recursive (an outer activation
// of it still needs those registers), and the callee's frame, whose start becomes the lane's
// frame base (SpecialSlot::kFrameBase: the function's variables are at offsets from it, and
// local addresses stay absolute, valid in every frame as PTX wants them). The caller's
// `.param` arguments are copied to the callee's formals; `ret` copies the return formals back
// into the caller's `.param` variables, restores the registers and pops the frame.
//
// The stack size limit (cuCtxSetLimit(CU_LIMIT_STACK_SIZE), per thread) is charged with what a
// GPU's frame would hold (Callee::stack_charge: the call record and the .local variables), not
// with the saved registers and `.param` copies, which a GPU keeps in far fewer bytes or in
// registers, so that a recursion depth that fits a GPU's stack fits here. A call beyond the limit
// fails the launch with CUDA_ERROR_LAUNCH_FAILED.
//
// Lanes of a warp may call different functions or recurse to different depths: the scheduler
// (Block::Schedule) runs the deepest lanes first and reconverges lanes that return to the same
// call site at the same depth.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

struct CallRecord {
  uint32_t site;
  uint32_t callee;
  uint64_t caller_frame;
};
static_assert(sizeof(CallRecord) == kCallRecordBytes);

uint64_t SavedBytes(const Callee& callee) {
  return uint64_t{callee.saved_end - callee.saved_begin} * sizeof(uint64_t);
}

void CopyVariables(uint8_t* lane_memory, uint64_t to_frame,
                   const std::vector<std::pair<uint32_t, uint32_t>>& to, uint64_t from_frame,
                   const std::vector<std::pair<uint32_t, uint32_t>>& from) {
  for (size_t k = 0; k < to.size(); ++k) {
    std::memmove(lane_memory + to_frame + to[k].first, lane_memory + from_frame + from[k].first,
                 std::min(to[k].second, from[k].second));
  }
}

}  // namespace

uint64_t StackCapacity(const Function& function, uint64_t limit) {
  // Every chain of frames whose charges fit the limit fits in limit x (the largest ratio of a
  // frame's real size to its charge) bytes.
  uint64_t capacity = 0;
  for (const Callee& callee : function.callees) {
    if (callee.entry == Callee::kNoEntry) continue;
    uint64_t bytes = kCallRecordBytes + SavedBytes(callee) + callee.frame_bytes;
    capacity = std::max(capacity, (limit / callee.stack_charge + 1) * bytes);
  }
  return std::min(capacity, kMaxLaneStackBytes);
}

bool Block::ExecuteCall(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  const CallSite& site = function_->call_sites[in.target];
  const uint64_t* address = in.src[0] != kNoSlot ? TALLY_R(in.src[0]) : nullptr;
  uint64_t* frame_base = TALLY_R(SpecialSlot::kFrameBase);
  for (uint32_t m = mask; m != 0; m &= m - 1) {
    const int l = std::countr_zero(m);
    uint32_t index = site.callee;
    if (address != nullptr) {
      uint64_t offset = address[l] - kFunctionWindow;
      index = static_cast<uint32_t>(offset / kFunctionAlign);
      if (offset % kFunctionAlign != 0 || offset / kFunctionAlign >= function_->callees.size() ||
          function_->callees[index].entry == Callee::kNoEntry) {
        char text[96];
        std::snprintf(text, sizeof(text), "indirect call to 0x%llx, which is not a function",
                      static_cast<unsigned long long>(address[l]));
        Fault(warp, l, pc, CUDA_ERROR_ILLEGAL_INSTRUCTION, text);
        return false;
      }
    }
    const Callee& callee = function_->callees[index];
    if (site.arguments.size() != callee.params.size() ||
        site.returns.size() != callee.returns.size()) {
      Fault(warp, l, pc, CUDA_ERROR_ILLEGAL_INSTRUCTION,
            "indirect call whose prototype does not match " + callee.name);
      return false;
    }
    const uint64_t caller = frame_base[l];
    const uint64_t record = caller + site.caller_frame_bytes;
    const uint64_t base = record + kCallRecordBytes + SavedBytes(callee);
    const bool over_limit = warp.stack_used[l] + callee.stack_charge > stack_limit_;
    if (over_limit || base + callee.frame_bytes > lane_local_bytes_) {
      Fault(warp, l, pc, CUDA_ERROR_LAUNCH_FAILED,
            "stack overflow: calling " + callee.name + " at call depth " +
                std::to_string(warp.depth[l] + 1) + " exceeds " +
                (over_limit ? "the stack size of " + std::to_string(stack_limit_) +
                                  " bytes per thread (cuCtxSetLimit(CU_LIMIT_STACK_SIZE))"
                            : "the emulator's call stack storage of " +
                                  std::to_string(lane_local_bytes_ - function_->local_bytes) +
                                  " bytes per thread"));
      return false;
    }
    uint8_t* lane_memory = LaneLocal(warp, l);
    const CallRecord call{in.target, index, caller};
    std::memcpy(lane_memory + record, &call, sizeof(call));
    uint8_t* saved = lane_memory + record + kCallRecordBytes;
    for (uint32_t slot = callee.saved_begin; slot < callee.saved_end; ++slot) {
      std::memcpy(saved, &warp.regs[uint64_t{slot} * 32 + l], sizeof(uint64_t));
      saved += sizeof(uint64_t);
    }
    CopyVariables(lane_memory, base, callee.params, caller, site.arguments);
    frame_base[l] = base;
    warp.stack_used[l] += callee.stack_charge;
    ++warp.depth[l];
    warp.in_call |= 1u << l;
    warp.pc[l] = callee.entry;
  }
  for (uint32_t m = warp.active & ~mask; m != 0; m &= m - 1) {
    warp.pc[std::countr_zero(m)] = pc + 1;
  }
  return true;
}

bool Block::ExecuteReturn(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  const Callee& callee = function_->callees[in.target];
  uint64_t* frame_base = TALLY_R(SpecialSlot::kFrameBase);
  for (uint32_t m = mask; m != 0; m &= m - 1) {
    const int l = std::countr_zero(m);
    uint8_t* lane_memory = LaneLocal(warp, l);
    const uint64_t base = frame_base[l];
    const uint64_t record = base - SavedBytes(callee) - kCallRecordBytes;
    CallRecord call;
    std::memcpy(&call, lane_memory + record, sizeof(call));
    // The record is in memory the kernel can write (through a stray local pointer): check it.
    if (call.site >= function_->call_sites.size() || call.callee != in.target ||
        call.caller_frame > record ||
        record - call.caller_frame != function_->call_sites[call.site].caller_frame_bytes) {
      Fault(warp, l, pc, CUDA_ERROR_LAUNCH_FAILED,
            "the call stack of " + callee.name + " was overwritten");
      return false;
    }
    const CallSite& site = function_->call_sites[call.site];
    CopyVariables(lane_memory, call.caller_frame, site.returns, base, callee.returns);
    const uint8_t* saved = lane_memory + record + kCallRecordBytes;
    for (uint32_t slot = callee.saved_begin; slot < callee.saved_end; ++slot) {
      std::memcpy(&warp.regs[uint64_t{slot} * 32 + l], saved, sizeof(uint64_t));
      saved += sizeof(uint64_t);
    }
    frame_base[l] = call.caller_frame;
    warp.stack_used[l] -= callee.stack_charge;
    if (--warp.depth[l] == 0) warp.in_call &= ~(1u << l);
    warp.pc[l] = site.return_pc;
  }
  for (uint32_t m = warp.active & ~mask; m != 0; m &= m - 1) {
    warp.pc[std::countr_zero(m)] = pc + 1;
  }
  return true;
}

}  // namespace tally::emu::exec
