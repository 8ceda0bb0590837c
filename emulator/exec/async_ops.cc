// cp.async and mbarrier. A block runs on one host thread, so its shared-memory barriers need no
// host atomics. cp.async copies complete when issued (allowed by its asynchronous semantics:
// the data may land any time before the wait), so only the mbarrier phases carry state.
//
// The 64-bit mbarrier object is opaque (PTX ISA, "Size and alignment of mbarrier object"); the
// emulator keeps: bits 0-19 pending arrivals of the current phase, 20-39 expected arrivals,
// 40-61 the transaction count (two's complement), 63 the phase parity. An arrival's state token
// is the phase parity it arrived in (bit 63) with the pending count after it (bits 0-19).
#include <cstring>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

constexpr uint64_t kCountMask = (1u << 20) - 1;
constexpr int kExpectedShift = 20, kTxShift = 40;
constexpr uint64_t kTxMask = (uint64_t{1} << 22) - 1;
constexpr uint64_t kPhaseBit = uint64_t{1} << 63;

struct MbarrierState {
  uint64_t pending, expected;
  int64_t tx;
  bool phase;

  static MbarrierState Decode(uint64_t word) {
    int64_t tx = static_cast<int64_t>((word >> kTxShift) & kTxMask);
    if (tx & (int64_t{1} << 21)) tx -= int64_t{1} << 22;
    return {word & kCountMask, (word >> kExpectedShift) & kCountMask, tx, (word & kPhaseBit) != 0};
  }
  uint64_t Encode() const {
    return (pending & kCountMask) | (expected & kCountMask) << kExpectedShift |
           (static_cast<uint64_t>(tx) & kTxMask) << kTxShift | (phase ? kPhaseBit : 0);
  }
  // The current phase completes once every arrival and every transaction happened.
  void CompleteIfDone() {
    if (pending != 0 || tx != 0) return;
    phase = !phase;
    pending = expected;
  }
};

}  // namespace

bool Block::ExecuteAsync(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc) {
  const uint64_t* base = TALLY_R(in.address);
  const uint64_t* value = in.src[0] != kNoSlot ? TALLY_R(in.src[0]) : nullptr;
  bool ok = true;
  if (in.op == Op::kCpAsync) {
    const uint32_t bytes = in.vec;
    const uint64_t* src_offset = TALLY_R(in.src[3]);
    ForLanes(mask, [&](int l) {
      if (!ok) return;
      uint32_t src_bytes = bytes;
      if (in.src[1] != kNoSlot) src_bytes = std::min<uint64_t>(TALLY_R(in.src[1])[l], bytes);
      if (in.src[2] != kNoSlot &&
          ((TALLY_R(in.src[2])[l] != 0) != ((in.flags & kFlagNegateSrcB) != 0))) {
        src_bytes = 0;  // ignore-src: the destination is filled with zeros
      }
      uint64_t dst_address = base[l] + in.offset, src_address = value[l] + src_offset[l];
      uint8_t* dst = Translate(Space::kShared, dst_address, bytes, warp, l, pc, true);
      const uint8_t* src =
          src_bytes == 0 ? dst
                         : Translate(Space::kGlobal, src_address, src_bytes, warp, l, pc, false);
      if (dst == nullptr || src == nullptr) {
        ok = false;
        return;
      }
      if (dst_address % bytes != 0 || src_address % bytes != 0) {
        Fault(warp, l, pc, CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned cp.async");
        ok = false;
        return;
      }
      std::memcpy(dst, src, src_bytes);
      std::memset(dst + src_bytes, 0, bytes - src_bytes);
    });
    ++writes_;
    return ok;
  }

  const auto op = static_cast<MbarrierOp>(in.mod);
  uint64_t* d = (in.flags & kFlagHasResult) ? TALLY_R(in.dst[0]) : nullptr;
  if (op == MbarrierOp::kPendingCount) {
    ForLanes(mask, [&](int l) { d[l] = value[l] & kCountMask; });
    return true;
  }
  ForLanes(mask, [&](int l) {
    if (!ok) return;
    uint64_t address = base[l] + in.offset;
    uint8_t* host = Translate(in.space, address, 8, warp, l, pc, true);
    if (host == nullptr) {
      ok = false;
      return;
    }
    if (address % 8 != 0 ||
        (in.space == Space::kGeneric && address - kSharedWindow >= kWindowSize)) {
      Fault(warp, l, pc, CUDA_ERROR_MISALIGNED_ADDRESS,
            "an mbarrier must be an 8-byte aligned object in shared memory");
      ok = false;
      return;
    }
    uint64_t word = 0;
    std::memcpy(&word, host, 8);
    MbarrierState state = MbarrierState::Decode(word);
    const uint64_t operand = value != nullptr ? value[l] : 0;
    auto arrive = [&](uint64_t count) {
      if (count == 0 || count > state.pending) {
        Fault(warp, l, pc, CUDA_ERROR_LAUNCH_FAILED,
              "mbarrier arrival count exceeds the pending count of the phase");
        ok = false;
        return;
      }
      const bool arrived_in = state.phase;
      state.pending -= count;
      const uint64_t token = (arrived_in ? kPhaseBit : 0) | state.pending;
      state.CompleteIfDone();
      if (d != nullptr) d[l] = token;
    };
    switch (op) {
      case MbarrierOp::kInit:
        if (operand == 0 || operand > kCountMask) {
          Fault(warp, l, pc, CUDA_ERROR_LAUNCH_FAILED, "mbarrier.init count out of range");
          ok = false;
          return;
        }
        state = {operand, operand, 0, false};
        break;
      case MbarrierOp::kInval:
        state = {0, 0, 0, false};
        break;
      case MbarrierOp::kArrive:
        arrive(operand);
        break;
      case MbarrierOp::kArriveDrop:  // this and every later phase expect `count` fewer arrivals
        if (operand > state.expected) {
          Fault(warp, l, pc, CUDA_ERROR_LAUNCH_FAILED, "mbarrier.arrive_drop below zero");
          ok = false;
          return;
        }
        state.expected -= operand;
        arrive(operand);
        break;
      case MbarrierOp::kExpectTx:
        state.tx += static_cast<int64_t>(operand);
        break;
      case MbarrierOp::kCompleteTx:
        state.tx -= static_cast<int64_t>(operand);
        state.CompleteIfDone();
        break;
      case MbarrierOp::kArriveExpectTx:
        state.tx += static_cast<int64_t>(operand);
        arrive(1);
        break;
      case MbarrierOp::kTestWait:  // the phase the token arrived in has completed
        d[l] = ((operand & kPhaseBit) != 0) != state.phase;
        return;
      case MbarrierOp::kTestWaitParity:  // the phase of parity `operand` has completed
        d[l] = (operand & 1) != static_cast<uint64_t>(state.phase);
        return;
      case MbarrierOp::kPendingCount:
        return;
    }
    if (!ok) return;
    word = state.Encode();
    std::memcpy(host, &word, 8);
  });
  if (op != MbarrierOp::kTestWait && op != MbarrierOp::kTestWaitParity) ++writes_;
  return ok;
}

}  // namespace tally::emu::exec
