// Block execution: warp scheduling with per-lane program counters, named barriers (threads that
// exited count as arrived), deadlock detection, and bounds-checked address translation.
#include "emulator/exec/block.h"

#include <sys/mman.h>

#include <bit>

#include "common/log.h"
#include "emulator/internal/cuda_status.h"

namespace tally::emu::exec {

LocalMemory::~LocalMemory() {
  if (data_ != nullptr) munmap(data_, size_);
}

bool LocalMemory::Reserve(uint64_t bytes) {
  if (bytes <= size_) return true;
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) return false;
  data_ = static_cast<uint8_t*>(mapping);
  size_ = bytes;
  return true;
}

void Block::Reset(const LaunchSetup& setup, Dim3 ctaid, uint32_t sm) {
  ctaid_ = ctaid;
  exited_ = 0;
  fault_code_ = CUDA_SUCCESS;
  fault_.clear();
  for (uint32_t& a : arrived_) a = 0;
  for (uint32_t& e : expected_) e = 0;
  for (BarRedMode& m : reduction_mode_) m = BarRedMode::kNone;
  for (uint32_t& r : reduction_arrived_) r = 0;
  for (uint32_t& v : reduction_votes_) v = 0;
  const bool prepare = cached_launch_ != setup.launch_id;
  if (prepare) PrepareLaunch(setup);
  if (fault_code_ != CUDA_SUCCESS) return;  // RunRound reports it
  const bool moved = prepare || sm_ != sm;  // %smid must be (re)written
  sm_ = sm;
  std::fill(shared_.begin(), shared_.end(), 0);
  // The cluster: CTAs are grouped into clusters of setup.cluster's shape, ranked x first.
  const Dim3& cluster = setup.cluster;
  const Dim3 in_cluster{ctaid.x % cluster.x, ctaid.y % cluster.y, ctaid.z % cluster.z};
  cluster_rank_ = in_cluster.x + cluster.x * (in_cluster.y + cluster.y * in_cluster.z);
  cluster_size_ = static_cast<uint32_t>(cluster.Count());
  cluster_peers_ = nullptr;
  cluster_arrivals_ = cluster_waiting_ = 0;
  const bool calls = !function_->call_sites.empty();
  for (Warp& warp : warps_) {
    std::fill(std::begin(warp.pc), std::end(warp.pc), 0);
    warp.live = warp.initial_live;
    warp.blocked = warp.active = warp.cluster_arrived = 0;
    // %ctaid, the cluster position and %smid are the only special registers that differ
    // between blocks of a launch.
    uint64_t* regs = warp.regs;
    auto set3 = [&](SpecialSlot first, uint32_t x, uint32_t y, uint32_t z) {
      uint64_t* slot = regs + static_cast<uint32_t>(first) * 32;
      std::fill_n(slot, 32, x);
      std::fill_n(slot + 32, 32, y);
      std::fill_n(slot + 64, 32, z);
    };
    set3(SpecialSlot::kCtaidX, ctaid.x, ctaid.y, ctaid.z);
    if (moved) std::fill_n(regs + static_cast<uint32_t>(SpecialSlot::kSmId) * 32, 32, sm);
    if (function_->reads_cluster_position) {
      set3(SpecialSlot::kClusterCtaidX, in_cluster.x, in_cluster.y, in_cluster.z);
      set3(SpecialSlot::kClusterIdX, ctaid.x / cluster.x, ctaid.y / cluster.y,
           ctaid.z / cluster.z);
      std::fill_n(regs + static_cast<uint32_t>(SpecialSlot::kClusterCtarank) * 32, 32,
                  cluster_rank_);
    }
    if (calls) {  // lanes of the previous block may have exited inside calls
      warp.in_call = 0;
      std::fill(std::begin(warp.depth), std::end(warp.depth), 0);
      std::fill(std::begin(warp.stack_used), std::end(warp.stack_used), 0);
      std::fill_n(regs + static_cast<uint32_t>(SpecialSlot::kFrameBase) * 32, 32, 0);
    }
  }
}

// Everything that stays the same for all blocks of a launch: buffer sizes, the per-lane special
// registers but %smid (special and constant slots are never written by code) and the access
// cache.
void Block::PrepareLaunch(const LaunchSetup& setup) {
  setup_ = &setup;
  function_ = setup.function;
  threads_ = static_cast<uint32_t>(setup.block.Count());
  stack_limit_ = setup.stack_size;
  lane_local_bytes_ = function_->local_bytes + StackCapacity(*function_, setup.stack_size);
  if (!local_.Reserve(uint64_t{threads_} * lane_local_bytes_)) {
    fault_code_ = CUDA_ERROR_OUT_OF_MEMORY;
    fault_ = "kernel " + function_->name + ": no memory for " + std::to_string(threads_) +
             " threads' local memory of " + std::to_string(lane_local_bytes_) + " bytes";
    return;
  }
  cached_launch_ = setup.launch_id;
  access_cache_.assign(function_->code.size(), AccessRange{});
  const uint64_t user_shared =
      uint64_t{function_->static_shared_bytes} + setup.dynamic_shared_bytes;
  const uint64_t reserved_begin = (user_shared + kReservedSharedAlignment - 1) /
                                  kReservedSharedAlignment * kReservedSharedAlignment;
  shared_.assign(
      function_->uses_reserved_shared ? reserved_begin + kReservedSharedBytes : user_shared, 0);

  const uint32_t slots = function_->num_slots;
  const uint32_t warp_count = (threads_ + 31) / 32;
  registers_.assign(uint64_t{warp_count} * slots * 32, 0);
  warps_.assign(warp_count, Warp{});
  const Dim3& block = setup.block;
  const uint64_t specials[] = {0, 0, 0, block.x,      block.y,      block.z,
                               0, 0, 0, setup.grid.x, setup.grid.y, setup.grid.z};
  for (uint32_t w = 0; w < warp_count; ++w) {
    Warp& warp = warps_[w];
    warp.index = w;
    warp.regs = registers_.data() + uint64_t{w} * slots * 32;
    uint64_t* regs = warp.regs;
    auto set = [&](SpecialSlot slot, int lane, uint64_t value) {
      regs[static_cast<uint32_t>(slot) * 32 + lane] = value;
    };
    for (int lane = 0; lane < 32; ++lane) {
      uint32_t thread = w * 32 + lane;
      if (thread < threads_) warp.initial_live |= 1u << lane;
      for (int s = 3; s < 12; ++s) regs[s * 32 + lane] = specials[s];
      set(SpecialSlot::kTidX, lane, thread % block.x);
      set(SpecialSlot::kTidY, lane, thread / block.x % block.y);
      set(SpecialSlot::kTidZ, lane, thread / (block.x * block.y));
      set(SpecialSlot::kLaneId, lane, lane);
      set(SpecialSlot::kWarpId, lane, w);
      set(SpecialSlot::kNwarpId, lane, warp_count);
      set(SpecialSlot::kNsmId, lane, setup.sm_count);
      set(SpecialSlot::kGridId, lane, setup.launch_id);
      set(SpecialSlot::kLanemaskEq, lane, 1u << lane);
      set(SpecialSlot::kLanemaskLt, lane, (1u << lane) - 1);
      set(SpecialSlot::kLanemaskLe, lane, (2ull << lane) - 1);
      set(SpecialSlot::kLanemaskGt, lane, ~((2ull << lane) - 1) & 0xffffffffu);
      set(SpecialSlot::kLanemaskGe, lane, ~((1ull << lane) - 1) & 0xffffffffu);
      set(SpecialSlot::kDynamicSmemSize, lane, setup.dynamic_shared_bytes);
      set(SpecialSlot::kTotalSmemSize, lane, user_shared);
      set(SpecialSlot::kAggrSmemSize, lane, user_shared + kReservedSharedBytes);
      set(SpecialSlot::kReservedSmemBegin, lane, reserved_begin);
      set(SpecialSlot::kReservedSmemEnd, lane, reserved_begin + kReservedSharedBytes);
      set(SpecialSlot::kReservedSmemCap, lane, kReservedSharedBytes);
      set(SpecialSlot::kReservedSmemOffset0, lane, reserved_begin);
      set(SpecialSlot::kReservedSmemOffset1, lane, reserved_begin + kReservedSharedBytes / 2);
      set(SpecialSlot::kEnvReg1, lane, setup.grid_workspace >> 32);
      set(SpecialSlot::kEnvReg2, lane, setup.grid_workspace & 0xffffffffu);
      set(SpecialSlot::kClusterNctaidX, lane, setup.cluster.x);
      set(SpecialSlot::kClusterNctaidY, lane, setup.cluster.y);
      set(SpecialSlot::kClusterNctaidZ, lane, setup.cluster.z);
      set(SpecialSlot::kNclusterIdX, lane, setup.grid.x / setup.cluster.x);
      set(SpecialSlot::kNclusterIdY, lane, setup.grid.y / setup.cluster.y);
      set(SpecialSlot::kNclusterIdZ, lane, setup.grid.z / setup.cluster.z);
      set(SpecialSlot::kClusterNctarank, lane, setup.cluster.Count());
      set(SpecialSlot::kIsExplicitCluster, lane, setup.explicit_cluster ? 1 : 0);
    }
    for (const auto& [slot, value] : function_->constants) {
      for (int lane = 0; lane < 32; ++lane) regs[slot * 32 + lane] = value;
    }
  }
}

void Block::Schedule(Warp& warp) {
  uint32_t runnable = warp.live & ~warp.blocked;
  warp.active = 0;
  warp.others_min = UINT32_MAX;
  if (runnable == 0) return;
  if ((runnable & warp.in_call) != 0) {
    // Lanes inside real calls: the deepest run first, so that lanes returning to a call site
    // find the lanes waiting there (at the same depth) and reconverge with them.
    uint32_t deepest = 0;
    for (uint32_t m = runnable; m != 0; m &= m - 1) {
      deepest = std::max(deepest, warp.depth[std::countr_zero(m)]);
    }
    for (uint32_t m = runnable; m != 0; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (warp.depth[lane] != deepest) runnable &= ~(1u << lane);
    }
  }
  uint32_t min = UINT32_MAX;
  for (uint32_t m = runnable; m != 0; m &= m - 1) min = std::min(min, warp.pc[std::countr_zero(m)]);
  for (uint32_t m = runnable; m != 0; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (warp.pc[lane] == min) {
      warp.active |= 1u << lane;
    } else {
      warp.others_min = std::min(warp.others_min, warp.pc[lane]);
    }
  }
  warp.cur_pc = min;
}

absl::Status Block::Run() {
  while (true) {
    absl::StatusOr<bool> done = RunRound();
    if (!done.ok()) return done.status();
    if (*done) return absl::OkStatus();
  }
}

absl::StatusOr<bool> Block::RunRound() {
  if (fault_code_ != CUDA_SUCCESS) return CudaError(fault_code_, fault_);
  // A launch that failed elsewhere or was cancelled (a dead client's) stops before the next
  // round, not after it: a round of many resident blocks is long.
  if (setup_->abort.load(std::memory_order_relaxed)) return true;
  bool any_live = false, ran = false;
  for (Warp& warp : warps_) {
    if (warp.live == 0) continue;
    any_live = true;
    if ((warp.live & ~warp.blocked) == 0) continue;
    ran = true;
    if (RunWarp(warp, kTimeSlice) == WarpStatus::kFault) return CudaError(fault_code_, fault_);
  }
  if (!any_live) return true;
  if (setup_->abort.load(std::memory_order_relaxed)) return true;
  if (!ReleaseBarriers() && !ran) {
    // Lanes wait at barrier.cluster for other CTAs, which the cluster's runner runs and whose
    // arrival it checks (and which may release the other waits here).
    if (cluster_waiting_ != 0 && cluster_size_ > 1) return false;
    // Every live thread waits at a barrier that the remaining threads will never reach
    // (e.g. bar.sync in divergent code with a thread count that cannot be met).
    uint32_t waiting = 0;
    for (const Warp& warp : warps_) waiting += std::popcount(warp.blocked);
    fault_ = "kernel " + function_->name + ": barrier can never complete in block (" +
             std::to_string(ctaid_.x) + "," + std::to_string(ctaid_.y) + "," +
             std::to_string(ctaid_.z) + "): " + std::to_string(waiting) + " of " +
             std::to_string(threads_ - exited_) + " live threads are waiting";
    return CudaError(CUDA_ERROR_LAUNCH_FAILED, fault_);
  }
  return false;
}

void Block::Arrive(Warp& warp, uint32_t lanes, uint32_t barrier, uint32_t count, bool wait) {
  arrived_[barrier] += std::popcount(lanes);
  if (count != 0) expected_[barrier] = count;
  if (!wait) return;
  warp.blocked |= lanes;
  for (uint32_t m = lanes; m != 0; m &= m - 1) warp.barrier_of_lane[std::countr_zero(m)] = barrier;
}

void Block::ArriveReduce(Warp& warp, uint32_t lanes, uint32_t barrier, uint32_t count,
                         uint32_t votes, BarRedMode mode, uint32_t dst) {
  reduction_mode_[barrier] = mode;
  reduction_arrived_[barrier] += std::popcount(lanes);
  reduction_votes_[barrier] += std::popcount(votes & lanes);
  for (uint32_t m = lanes; m != 0; m &= m - 1) warp.reduction_dst[std::countr_zero(m)] = dst;
  Arrive(warp, lanes, barrier, count, /*wait=*/true);
}

// PTX ISA, "bar, barrier": a barrier completes when the expected number of threads arrived;
// without a count that is every thread of the block, where exited threads count as arrived.
bool Block::ReleaseBarriers() {
  bool released = false;
  for (uint32_t b = 0; b < 16; ++b) {
    if (arrived_[b] == 0) continue;
    uint32_t needed = expected_[b] != 0 ? expected_[b] : threads_ - exited_;
    if (arrived_[b] < needed) continue;
    const BarRedMode mode = reduction_mode_[b];
    const uint32_t votes = reduction_votes_[b];
    const uint64_t result = mode == BarRedMode::kPopc  ? votes
                            : mode == BarRedMode::kAnd ? votes == reduction_arrived_[b]
                                                       : votes != 0;
    for (Warp& warp : warps_) {
      for (uint32_t m = warp.blocked; m != 0; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (warp.barrier_of_lane[lane] != b) continue;
        warp.blocked &= ~(1u << lane);
        if (mode != BarRedMode::kNone) warp.regs[warp.reduction_dst[lane] * 32 + lane] = result;
      }
    }
    arrived_[b] = 0;
    expected_[b] = 0;
    reduction_mode_[b] = BarRedMode::kNone;
    reduction_arrived_[b] = 0;
    reduction_votes_[b] = 0;
    released = true;
    ++barrier_releases_;
  }
  if (cluster_arrivals_ != 0 && cluster_size_ == 1) {
    Block* self = this;
    released |= ReleaseClusterBarrier(&self, 1);
  }
  return released;
}

std::string Block::ThreadName(const Warp& warp, int lane) const {
  uint32_t thread = warp.index * 32 + lane;
  const Dim3& block = setup_->block;
  return "block (" + std::to_string(ctaid_.x) + "," + std::to_string(ctaid_.y) + "," +
         std::to_string(ctaid_.z) + "), thread (" + std::to_string(thread % block.x) + "," +
         std::to_string(thread / block.x % block.y) + "," +
         std::to_string(thread / (block.x * block.y)) + ")";
}

void Block::Fault(const Warp& warp, int lane, uint32_t pc, CUresult code, std::string what) {
  if (fault_code_ != CUDA_SUCCESS) return;  // the first fault of the block is the one reported
  fault_code_ = code;
  fault_ = "kernel " + function_->name + ": " + what + " at PTX line " +
           std::to_string(function_->code[pc].line) + ", " + ThreadName(warp, lane);
}

uint8_t* Block::TranslateGlobal(uint64_t address, uint32_t size, uint32_t pc, bool write) {
  AccessRange& range = access_cache_[pc];
  if (address >= range.lo && address < range.hi && size <= range.hi - address) {
    return reinterpret_cast<uint8_t*>(address);
  }
  std::optional<Allocation> allocation = setup_->memory->Find(address);
  if (!allocation || size > allocation->base + allocation->size - address) return nullptr;
  // A mapping the device has no (write) access to (cuMemSetAccess). An instruction either reads
  // or writes, so the cache of its pc never lets a write through read-only memory.
  if (!Permits(allocation->access, write)) return nullptr;
  // Another tenant's memory does not exist for a tenant's launch (a launch of no tenant, the
  // device owner's, reaches everything). Checked only here, on a miss of the cache, which is per
  // launch: hits cost nothing more.
  if (setup_->tenant != 0 && allocation->tenant != 0 && allocation->tenant != setup_->tenant) {
    return nullptr;
  }
  range = {allocation->base, allocation->base + allocation->size};
  return reinterpret_cast<uint8_t*>(address);
}

uint8_t* Block::Translate(Space space, uint64_t address, uint32_t size, const Warp& warp, int lane,
                          uint32_t pc, bool write) {
  // Addresses are "truncated if the register width exceeds the state space address width"
  // (PTX ISA, "Addresses as Operands"): 32 bits for shared and local memory, so a 32-bit
  // register plus an offset wraps as on a GPU (nvcc folds s[i + 128] into [%r + 512] with %r
  // "negative").
  if (space == Space::kShared || space == Space::kLocal) address &= 0xffffffffu;
  if (space == Space::kGeneric) {
    if (address - kSharedWindow < kWindowSize) {
      space = Space::kShared;
      address -= kSharedWindow;
    } else if (address - kLocalWindow < kWindowSize) {
      space = Space::kLocal;
      address -= kLocalWindow;
    } else if (address - kParamWindow < kWindowSize) {
      space = Space::kParam;
      address -= kParamWindow;
    }
  }
  uint8_t* host = nullptr;
  switch (space) {
    case Space::kGeneric:
    case Space::kGlobal:
    case Space::kConst:
      host = TranslateGlobal(address, size, pc, write);
      break;
    case Space::kShared:
      if (address < shared_.size() && size <= shared_.size() - address) {
        host = shared_.data() + address;
      } else if (address <= 0xffffffffu) {
        host = TranslateClusterShared(static_cast<uint32_t>(address), size);
      }
      break;
    case Space::kLocal:
      if (address < lane_local_bytes_ && size <= lane_local_bytes_ - address) {
        host = LaneLocal(warp, lane) + address;
      }
      break;
    case Space::kParam:
      if (!write && address < setup_->params.size() && size <= setup_->params.size() - address) {
        host = const_cast<uint8_t*>(setup_->params.data()) + address;
      }
      break;
  }
  if (host == nullptr) {
    constexpr const char* kSpaceNames[] = {"generic", "global", "shared",
                                           "local",   "param",  "const"};
    char text[160];
    std::snprintf(text, sizeof(text), "illegal %s of %u bytes at %s address 0x%llx",
                  write ? "write" : "read", size, kSpaceNames[static_cast<int>(space)],
                  static_cast<unsigned long long>(address));
    Fault(warp, lane, pc, CUDA_ERROR_ILLEGAL_ADDRESS, text);
  }
  return host;
}

}  // namespace tally::emu::exec
