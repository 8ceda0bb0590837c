// Decoding of cp.async and mbarrier (PTX ISA, "Data Movement and Conversion Instructions:
// cp.async" and "Parallel Synchronization and Communication Instructions: mbarrier").
#include "emulator/exec/decoder.h"

namespace tally::emu::exec::internal {

// cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size | , ignore-src};
// cp.async.commit_group; cp.async.wait_group N; cp.async.wait_all;
// cp.async.mbarrier.arrive{.noinc}.shared{::cta}.b64 [mbar].
// The emulator completes each copy when it is issued, which is one of the orders the
// asynchronous semantics allow; waiting for groups therefore has nothing left to do.
absl::Status Decoder::CpAsync() {
  if (!mods_.Take("async")) return Fail("only cp.async is implemented");
  if (mods_.Take("bulk")) return Fail("cp.async.bulk (tensor memory access) is not implemented");
  if (mods_.Take("commit_group") || mods_.Take("wait_all")) {
    inst_.op = Op::kNop;
    return Arity(0);
  }
  if (mods_.Take("wait_group")) {
    inst_.op = Op::kNop;
    return Arity(1);
  }
  if (mods_.Take("mbarrier")) {
    if (!mods_.Take("arrive")) return Fail("cp.async.mbarrier needs .arrive");
    mods_.TakeSpace();
    if (!mods_.Take("b64")) return Fail("cp.async.mbarrier.arrive needs .b64");
    TALLY_RETURN_IF_ERROR(Arity(1));
    // Without .noinc the pending count is raised at issue and lowered when the (already
    // complete) copies finish: no net effect. With .noinc it is one arrival.
    if (!mods_.Take("noinc")) {
      inst_.op = Op::kNop;
      return absl::OkStatus();
    }
    inst_.op = Op::kMbarrier;
    inst_.mod = static_cast<uint8_t>(MbarrierOp::kArrive);
    inst_.space = Space::kShared;
    TALLY_ASSIGN_OR_RETURN(LowerContext::Address address, context_.AddressOf(Operand(0)));
    inst_.address = address.base;
    inst_.offset = address.offset;
    inst_.src[0] = context_.Constant(1);
    return absl::OkStatus();
  }
  inst_.op = Op::kCpAsync;
  const bool global_only = mods_.Take("cg");  // .cg caches in L2 only and copies 16 bytes
  if (!global_only && !mods_.Take("ca")) return Fail("cp.async needs .ca or .cg");
  if (!mods_.Take("shared") && !mods_.Take("shared::cta"))
    return Fail("destination must be .shared");
  if (!mods_.Take("global")) return Fail("source must be .global");
  inst_.space = Space::kShared;
  // With .L2::cache_hint a 64-bit cache policy comes last: a hint.
  const size_t operands = in_.operands.size() - (mods_.Take("L2::cache_hint") ? 1 : 0);
  if (operands < 3 || operands > 4) return Fail("bad cp.async operands");
  const ptx::Operand& size = Operand(2);
  if (size.kind != ptx::Operand::Kind::kImmediate) return Fail("cp-size must be a constant");
  TALLY_ASSIGN_OR_RETURN(uint64_t bytes, context_.Evaluate(*size.expr));
  if (bytes != 4 && bytes != 8 && bytes != 16) return Fail("cp-size must be 4, 8 or 16");
  if (global_only && bytes != 16) return Fail("cp.async.cg copies 16 bytes");
  inst_.vec = static_cast<uint8_t>(bytes);
  TALLY_ASSIGN_OR_RETURN(LowerContext::Address dst, context_.AddressOf(Operand(0)));
  TALLY_ASSIGN_OR_RETURN(LowerContext::Address src, context_.AddressOf(Operand(1)));
  inst_.address = dst.base;
  inst_.offset = dst.offset;
  inst_.src[0] = src.base;
  inst_.src[3] = context_.Constant(static_cast<uint64_t>(src.offset));
  if (operands == 4) {
    const ptx::Operand& last = Operand(3);
    // A predicate (ignore-src: copy nothing, fill with zeros) or a source size in bytes.
    if (last.kind == ptx::Operand::Kind::kName && context_.IsPredicate(last.name)) {
      TALLY_ASSIGN_OR_RETURN(inst_.src[2], context_.Source(last, Type::kPred));
      if (last.negated) inst_.flags |= kFlagNegateSrcB;
    } else {
      TALLY_ASSIGN_OR_RETURN(inst_.src[1], context_.Source(last, Type::kU32));
    }
  }
  return absl::OkStatus();
}

// mbarrier.init / inval / arrive{.noComplete} / arrive_drop{.noComplete} / arrive.expect_tx /
// expect_tx / complete_tx / test_wait{.parity} / try_wait{.parity} / pending_count.
absl::Status Decoder::Mbarrier() {
  inst_.op = Op::kMbarrier;
  constexpr std::pair<std::string_view, MbarrierOp> kOps[] = {
      {"init", MbarrierOp::kInit},
      {"inval", MbarrierOp::kInval},
      {"arrive", MbarrierOp::kArrive},
      {"arrive_drop", MbarrierOp::kArriveDrop},
      {"expect_tx", MbarrierOp::kExpectTx},
      {"complete_tx", MbarrierOp::kCompleteTx},
      {"test_wait", MbarrierOp::kTestWait},
      {"try_wait", MbarrierOp::kTestWait},
      {"pending_count", MbarrierOp::kPendingCount},
  };
  auto op = mods_.TakeOne(kOps);
  if (!op) return Fail("unknown mbarrier operation");
  if (*op == MbarrierOp::kArrive && mods_.Take("expect_tx")) op = MbarrierOp::kArriveExpectTx;
  if ((*op == MbarrierOp::kTestWait) && mods_.Take("parity")) op = MbarrierOp::kTestWaitParity;
  // .noComplete promises that the arrival does not complete the phase; arriving normally is
  // then the same thing.
  mods_.Take("noComplete");
  // An mbarrier of another CTA of the cluster is addressed by a .shared::cluster address.
  inst_.space = mods_.TakeSpace();
  if (inst_.space != Space::kShared && inst_.space != Space::kGeneric) {
    return Fail("mbarrier objects live in shared memory");
  }
  if (!mods_.Take("b64")) return Fail("mbarrier needs .b64");
  inst_.mod = static_cast<uint8_t>(*op);

  if (*op == MbarrierOp::kPendingCount) {  // pending_count.b64 count, state
    TALLY_RETURN_IF_ERROR(Arity(2));
    TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(Operand(0)));
    TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(Operand(1), Type::kB64));
    inst_.flags |= kFlagHasResult;
    return absl::OkStatus();
  }
  // Operands: {result,} [addr]{, value}{, suspend-time hint}.
  const bool has_result = *op == MbarrierOp::kArrive || *op == MbarrierOp::kArriveDrop ||
                          *op == MbarrierOp::kArriveExpectTx || *op == MbarrierOp::kTestWait ||
                          *op == MbarrierOp::kTestWaitParity;
  const bool needs_value =
      *op != MbarrierOp::kInval && *op != MbarrierOp::kArrive && *op != MbarrierOp::kArriveDrop;
  size_t first = 0;
  if (has_result && !in_.operands.empty() && in_.operands[0].kind != ptx::Operand::Kind::kAddress) {
    if (Operand(0).kind != ptx::Operand::Kind::kSink) {
      TALLY_ASSIGN_OR_RETURN(inst_.dst[0], context_.Dest(Operand(0)));
      inst_.flags |= kFlagHasResult;
    }
    first = 1;
  }
  const bool is_wait = *op == MbarrierOp::kTestWait || *op == MbarrierOp::kTestWaitParity;
  if (is_wait && (inst_.flags & kFlagHasResult) == 0) return Fail("a wait needs a predicate");
  if (in_.operands.size() <= first) return Fail("missing mbarrier address");
  TALLY_ASSIGN_OR_RETURN(LowerContext::Address address, context_.AddressOf(Operand(first)));
  inst_.address = address.base;
  inst_.offset = address.offset;
  size_t rest = in_.operands.size() - first - 1;
  if (rest > (needs_value ? (is_wait ? 2u : 1u) : 1u) || (needs_value && rest == 0)) {
    return Fail("bad mbarrier operands");
  }
  if (rest == 0) {
    inst_.src[0] = context_.Constant(1);  // arrive / arrive_drop count; unused by inval
    return absl::OkStatus();
  }
  if (*op == MbarrierOp::kInval) return Fail("mbarrier.inval takes only an address");
  Type type = *op == MbarrierOp::kTestWait ? Type::kB64 : Type::kU32;
  TALLY_ASSIGN_OR_RETURN(inst_.src[0], context_.Source(Operand(first + 1), type));
  return absl::OkStatus();  // a try_wait suspend-time hint (rest == 2) changes nothing here
}

}  // namespace tally::emu::exec::internal
