// Decoding of control flow and synchronisation (executed by control_ops.cc): bra, brx.idx, ret,
// exit, trap, membar/fence, and the hints nanosleep and pmevent.
#include "emulator/exec/decoder.h"

namespace tally::emu::exec::internal {

// bra{.uni} label (PTX ISA, "bra").
absl::Status Decoder::Bra() {
  inst_.op = Op::kBra;
  TALLY_RETURN_IF_ERROR(Arity(1));
  if (Operand(0).kind != ptx::Operand::Kind::kName) return Fail("bra needs a label");
  context_.BranchTo(Operand(0).name);
  return absl::OkStatus();
}

// brx.idx{.uni} index, tlist (PTX ISA, "brx.idx"): tlist names a .branchtargets list.
absl::Status Decoder::Brx() {
  inst_.op = Op::kBrx;
  if (!mods_.Take("idx")) return Fail("brx needs .idx");
  TALLY_RETURN_IF_ERROR(Arity(2));
  if (Operand(1).kind != ptx::Operand::Kind::kName) {
    return Fail("the target list must be a .branchtargets label");
  }
  auto index = context_.Source(Operand(0), Type::kU32);
  if (index.ok()) inst_.src[0] = *index;
  context_.IndexedBranchTo(Operand(1).name);
  return index.status();
}

// ret: from an out-of-line function (a real call), to the end of an inlined callee, or, in the
// kernel itself, the thread's exit.
absl::Status Decoder::Ret() {
  if (context_.ReturnsFrom()) {
    inst_.op = Op::kRet;
    inst_.target = *context_.ReturnsFrom();
  } else if (context_.in_call()) {
    inst_.op = Op::kBra;  // to the end of the inlined callee
    context_.ReturnFromCall();
  } else {
    inst_.op = Op::kExit;
  }
  return absl::OkStatus();
}

// membar.level, fence{.sem}{.scope} and the proxy fences (PTX ISA, "membar/fence"): a full fence.
absl::Status Decoder::Fence() {
  inst_.op = Op::kFence;
  for (std::string_view level : {"gl", "proxy", "alias", "async"}) mods_.Take(level);
  return absl::OkStatus();
}

absl::Status Decoder::Plain(Op op) {
  inst_.op = op;
  return absl::OkStatus();
}

// nanosleep.u32 t and pmevent: hints (spinning warps yield after a time slice anyway).
absl::Status Decoder::Nop() {
  inst_.op = Op::kNop;
  mods_.TakeType();
  return absl::OkStatus();
}

}  // namespace tally::emu::exec::internal
