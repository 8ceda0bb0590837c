// Decoding of the thread-block cluster instructions (PTX ISA, "barrier.cluster", "mapa",
// "getctarank"); exec/cluster_ops.cc executes them.
#include "emulator/exec/decoder.h"

namespace tally::emu::exec::internal {

// barrier.cluster.arrive{.release | .relaxed}{.aligned}; barrier.cluster.wait{.acquire}{.aligned}.
absl::Status Decoder::ClusterBarrier() {
  inst_.op = Op::kClusterBarrier;
  if (mods_.Take("wait")) {
    inst_.mod = 1;
  } else if (!mods_.Take("arrive")) {
    return Fail("barrier.cluster needs .arrive or .wait");
  }
  return Arity(0);
}

// mapa{.shared::cluster}.type d, a, rank and getctarank{.shared::cluster}.type d, a with .u32
// or .u64: without the space, `a` (and mapa's result) are generic addresses, which need 64 bits.
absl::Status Decoder::Mapa(bool rank_of) {
  inst_.op = Op::kMapa;
  inst_.mod = rank_of ? 1 : 0;
  if (mods_.Take("shared::cluster")) inst_.space = Space::kShared;
  TALLY_RETURN_IF_ERROR(NeedType());
  if (inst_.type != Type::kU32 && inst_.type != Type::kU64) return Fail("needs .u32 or .u64");
  if (inst_.space == Space::kGeneric && inst_.type != Type::kU64) {
    return Fail("a generic address needs .u64");
  }
  return rank_of ? Operands(1) : Operands(2, {Type::kNone, Type::kU32});
}

}  // namespace tally::emu::exec::internal
