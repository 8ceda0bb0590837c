// Warp-collective instructions: shfl.sync, vote.sync, redux.sync, match.sync and activemask. They
// read all lanes of the warp at once, so they see the converged group that min-PC scheduling runs
// together; each lane's result covers the lanes of its own membermask.
#include <cstring>

#include "emulator/exec/block.h"
#include "emulator/exec/lanes.h"

namespace tally::emu::exec {
namespace {

// The .sync collectives take each lane's own membermask (PTX ISA, "vote.sync", "redux.sync",
// "match.sync": the operation is over the threads of the executing thread's membermask), so
// lanes of one warp may form several groups at once (cooperative_groups' labeled_partition,
// groups found with match.any.sync). Calls fn(members, lanes) once per distinct mask: `lanes`
// are the executing lanes whose membermask is `members` (restricted to the executing lanes; a
// lane is always a member of its own group). A warp with one mask costs one call.
template <typename Fn>
void ForGroups(uint32_t mask, const uint64_t* membermask, Fn fn) {
  for (uint32_t left = mask; left != 0;) {
    const uint32_t group = static_cast<uint32_t>(membermask[std::countr_zero(left)]);
    uint32_t lanes = 0;
    ForLanes(left, [&](int l) {
      if (static_cast<uint32_t>(membermask[l]) == group) lanes |= 1u << l;
    });
    fn((mask & group) | lanes, lanes);
    left &= ~lanes;
  }
}

}  // namespace

void Block::ExecuteCollective(const Inst& in, Warp& warp, uint32_t mask) {
  uint64_t* d = TALLY_R(in.dst[0]);
  const uint64_t* a = in.src[0] != kNoSlot ? TALLY_R(in.src[0]) : nullptr;
  const uint64_t* b = in.src[1] != kNoSlot ? TALLY_R(in.src[1]) : nullptr;
  const uint64_t* c = in.src[2] != kNoSlot ? TALLY_R(in.src[2]) : nullptr;
  switch (in.op) {
    case Op::kShfl: {
      // PTX ISA, "shfl.sync": c packs the segment mask (bits 8..12) and the clamp value.
      uint64_t source[32];
      std::memcpy(source, a, sizeof(source));
      const ShflMode mode = static_cast<ShflMode>(in.mod);
      uint64_t* p = in.dst[1] != kNoSlot ? TALLY_R(in.dst[1]) : nullptr;
      ForLanes(mask, [&](int l) {
        uint32_t lane_b = static_cast<uint32_t>(b[l]) & 0x1f;
        uint32_t clamp = static_cast<uint32_t>(c[l]) & 0x1f;
        uint32_t segmask = (static_cast<uint32_t>(c[l]) >> 8) & 0x1f;
        uint32_t max_lane = (l & segmask) | (clamp & ~segmask);
        uint32_t min_lane = l & segmask;
        int64_t j = 0;
        bool valid = false;
        switch (mode) {
          case ShflMode::kUp:
            j = l - static_cast<int64_t>(lane_b);
            valid = j >= max_lane;
            break;
          case ShflMode::kDown:
            j = l + lane_b;
            valid = j <= max_lane;
            break;
          case ShflMode::kBfly:
            j = l ^ lane_b;
            valid = j <= max_lane;
            break;
          case ShflMode::kIdx:
            j = min_lane | (lane_b & ~segmask);
            valid = j <= max_lane;
            break;
        }
        if (!valid) j = l;
        d[l] = source[j] & 0xffffffffu;
        if (p != nullptr) p[l] = valid;
      });
      break;
    }
    case Op::kVote: {
      const uint64_t negate = (in.flags & kFlagNegateSrcB) ? 1 : 0;
      uint32_t votes = 0;
      ForLanes(mask, [&](int l) {
        if (((a[l] & 1) ^ negate) != 0) votes |= 1u << l;
      });
      const VoteMode mode = static_cast<VoteMode>(in.mod);
      ForGroups(mask, b, [&](uint32_t members, uint32_t lanes) {
        const uint32_t group_votes = votes & members;
        uint64_t result = 0;
        switch (mode) {
          case VoteMode::kAll:
            result = group_votes == members;
            break;
          case VoteMode::kAny:
            result = group_votes != 0;
            break;
          case VoteMode::kUni:
            result = group_votes == 0 || group_votes == members;
            break;
          case VoteMode::kBallot:
            result = group_votes;
            break;
        }
        ForLanes(lanes, [&](int l) { d[l] = result; });
      });
      break;
    }
    case Op::kActiveMask:
      ForLanes(mask, [&](int l) { d[l] = warp.active; });
      break;
    case Op::kRedux: {
      const AtomOp op = static_cast<AtomOp>(in.mod);
      const bool is_signed = IsSigned(in.type);
      ForGroups(mask, b, [&](uint32_t members, uint32_t lanes) {
        uint64_t result = 0;
        bool first = true;
        ForLanes(members, [&](int l) {
          uint64_t v = a[l] & 0xffffffffu;
          if (first) {
            result = v;
            first = false;
            return;
          }
          switch (op) {
            case AtomOp::kAdd:
              result = (result + v) & 0xffffffffu;
              break;
            case AtomOp::kMin:
            case AtomOp::kMax: {
              bool less = is_signed ? ReadSigned(v, 32) < ReadSigned(result, 32) : v < result;
              if (less == (op == AtomOp::kMin) && v != result) result = v;
              break;
            }
            case AtomOp::kAnd:
              result &= v;
              break;
            case AtomOp::kOr:
              result |= v;
              break;
            default:
              result ^= v;
              break;
          }
        });
        ForLanes(lanes, [&](int l) { d[l] = result; });
      });
      break;
    }
    case Op::kMatch: {
      // Lanes of each lane's member mask (that run here) holding the same value as that lane.
      const uint64_t wm = WidthMask(TypeBits(in.type));
      uint64_t* p = in.dst[1] != kNoSlot ? TALLY_R(in.dst[1]) : nullptr;
      ForGroups(mask, b, [&](uint32_t members, uint32_t lanes) {
        if (in.mod == 0) {
          ForLanes(lanes, [&](int l) {
            uint32_t same = 0;
            ForLanes(members,
                     [&](int j) { same |= static_cast<uint32_t>(((a[j] ^ a[l]) & wm) == 0) << j; });
            d[l] = same;
          });
          return;
        }
        bool all = true;
        const uint64_t first = a[std::countr_zero(members)] & wm;
        ForLanes(members, [&](int j) { all = all && (a[j] & wm) == first; });
        ForLanes(lanes, [&](int l) {
          d[l] = all ? members : 0;
          if (p != nullptr) p[l] = all;
        });
      });
      break;
    }
    default:
      break;
  }
}

}  // namespace tally::emu::exec
