// One thread block in execution: its warps (lanes with per-lane program counters), shared and
// local memory, named barriers, and the bounds-checked translation of addresses. A block runs
// on one host thread; its warps interleave cooperatively (they yield at barriers and after a
// time slice, so warps spinning on each other's shared-memory writes still make progress).
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "emulator/exec/program.h"
#include "emulator/internal/device_heap.h"
#include "emulator/internal/device_memory.h"
#include "emulator/internal/tenant_output.h"
#include "emulator/internal/texture.h"

namespace tally::emu::exec {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t Count() const { return uint64_t{x} * y * z; }
};

// What every block of one launch shares (read-only during the launch).
struct LaunchSetup {
  uint64_t launch_id = 0;  // distinct per launch (keys per-launch caches)
  const Function* function = nullptr;
  const DeviceMemory* memory = nullptr;
  Dim3 grid, block;
  uint32_t dynamic_shared_bytes = 0;
  Dim3 cluster;                   // CTAs per cluster (1x1x1: every CTA is its own cluster)
  bool explicit_cluster = false;  // %is_explicit_cluster: the launch or kernel set the shape
  std::vector<uint8_t> params;
  uint32_t sm_count = 1;
  // Dispatch priority: the stream's, or the launch's CU_LAUNCH_ATTRIBUTE_PRIORITY; lower numbers
  // are dispatched first, as in CUDA.
  int priority = 0;
  bool cooperative = false;     // cuLaunchCooperativeKernel: all blocks are resident at once
  uint64_t grid_workspace = 0;  // device address of the grid_workspace (cooperative launches)
  DeviceHeap* heap = nullptr;   // device-side malloc/free (kernels that call them)
  const TextureTable* textures = nullptr;  // texture and surface objects
  std::atomic<bool> abort{false};          // a block failed or the library unloads: stop early
  uint64_t stack_size = 1024;  // per thread: cuCtxSetLimit(CU_LIMIT_STACK_SIZE) at the launch
  // The stream's tenant (cuda_abi/driver_extensions.h; 0: none, whose accesses reach all memory): global
  // accesses may touch only allocations of this tenant or of none, and device-side malloc gives
  // the tenant's memory.
  uint64_t tenant = 0;
  // Where a tenant's printf and assert text goes (null for no tenant: the process's stdout and
  // stderr, as CUDA prints).
  TenantOutput* output = nullptr;
};

// Storage for the call stacks of one lane is capped here (the mapping is committed lazily).
inline constexpr uint64_t kMaxLaneStackBytes = 4ull << 20;
// Bytes of call stack a lane of `function` needs so that any chain of calls within `limit`
// (charged as call_ops.cc describes) fits; 0 for a kernel without real calls.
uint64_t StackCapacity(const Function& function, uint64_t limit);

// Per-thread local memory of a block: an anonymous mapping that the kernel commits page by page
// as it touches it, so that call stacks cost only their used depth.
class LocalMemory {
 public:
  LocalMemory() = default;
  LocalMemory(const LocalMemory&) = delete;
  LocalMemory& operator=(const LocalMemory&) = delete;
  ~LocalMemory();
  // At least `bytes` (contents undefined); false when the mapping fails.
  bool Reserve(uint64_t bytes);
  uint8_t* data() const { return data_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

struct Warp {
  uint64_t* regs = nullptr;  // num_slots x 32 lanes, slot-major
  uint32_t pc[32] = {};      // valid for lanes outside `active`
  uint8_t barrier_of_lane[32] = {};
  uint32_t reduction_dst[32] = {};  // bar.red: where the lane receives the result
  uint32_t initial_live = 0;        // lanes that exist (the last warp may be partial)
  uint32_t live = 0;                // lanes that exist and have not exited
  uint32_t blocked = 0;             // lanes waiting at a barrier
  uint32_t active = 0;              // lanes executing together at cur_pc
  uint32_t cur_pc = 0;
  uint32_t others_min = 0;  // smallest pc among runnable lanes outside `active`
  uint32_t index = 0;       // warp number in the block
  // Real calls (call_ops.cc): lanes inside one, and per lane the call depth and the stack bytes
  // charged against the stack size limit.
  uint32_t in_call = 0;
  uint32_t depth[32] = {};
  uint32_t stack_used[32] = {};
  uint32_t cluster_arrived = 0;  // lanes that arrived in barrier.cluster's current phase
};

enum class WarpStatus { kYielded, kWaiting, kDone, kFault };

// What an instruction leaves the interpreter to do: advance the lanes still active to the next
// instruction, run on at the pcs it set (a branch: it rescheduled the warp), or stop on a fault.
enum class Flow { kNext, kJumped, kFault };

// Instructions a warp runs in a round before the next warp of its block gets a turn.
inline constexpr uint32_t kTimeSlice = 4096;

// Per-instruction cache of the allocation a global access hit last, so that the common case of
// one instruction streaming through one buffer is checked without a table lookup.
struct AccessRange {
  uint64_t lo = 0, hi = 0;
};

class Block {
 public:
  // Prepares block `ctaid` of `setup` (reusing buffers from the previous block this object ran)
  // on virtual SM `sm`.
  void Reset(const LaunchSetup& setup, Dim3 ctaid, uint32_t sm);
  // The launch whose per-launch state the block holds (0: none): another block of it is ready
  // after a cheap Reset.
  uint64_t prepared_launch() const { return cached_launch_; }
  // Runs to completion; an error names kernel, block, thread and cause.
  absl::Status Run();
  // One round: every runnable warp runs up to a time slice, then barriers are released. True
  // once every thread exited (or the launch aborts).
  absl::StatusOr<bool> RunRound();
  // Grows whenever the block changes state others can observe or that ends a wait: a store or
  // atomic, a thread's exit, a barrier's release. A grid whose blocks all keep it unchanged
  // for many rounds is spinning on something that will never happen.
  uint64_t progress() const { return writes_ + exited_ + barrier_releases_; }
  // Lane-instructions executed since the last call (cuda_abi/driver_extensions.h defines the count).
  uint64_t TakeLaneInstructions() { return std::exchange(lane_instructions_, 0); }

  // Used by the interpreter (warp.cc), which hands each instruction to its family (one file
  // each, opcodes.def).
  WarpStatus RunWarp(Warp& warp, uint32_t budget);
  // Host address for an access of `size` bytes, or nullptr after recording a fault.
  uint8_t* Translate(Space space, uint64_t address, uint32_t size, const Warp& warp, int lane,
                     uint32_t pc, bool write);
  void Fault(const Warp& warp, int lane, uint32_t pc, CUresult code, std::string what);
  void Arrive(Warp& warp, uint32_t lanes, uint32_t barrier, uint32_t count, bool wait);
  // bar.red: Arrive and wait, contributing the lanes in `votes` to the reduction whose result
  // each lane finds in register `dst` when the barrier completes.
  void ArriveReduce(Warp& warp, uint32_t lanes, uint32_t barrier, uint32_t count, uint32_t votes,
                    BarRedMode mode, uint32_t dst);
  // ld/st/atom for the lanes in `mask`; false after a fault.
  bool ExecuteMemory(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  // printf/assert for the lanes in `mask` (builtins.cc); false after a fault.
  bool ExecuteBuiltin(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  // tex/suld/sust for the lanes in `mask` (texture_ops.cc); false after a fault.
  bool ExecuteTexture(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  // call/ret of out-of-line functions for the lanes in `mask` (call_ops.cc): sets the pc of
  // every active lane; false after a fault.
  bool ExecuteCall(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  bool ExecuteReturn(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  // cp.async and mbarrier for the lanes in `mask` (async_ops.cc); false after a fault.
  bool ExecuteAsync(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  // mov and its vector forms, %clock and %globaltimer reads (move_ops.cc).
  void ExecuteMove(const Inst& in, Warp& warp, uint32_t mask);
  // cvt between integer and f32/f64 types, cvta, isspacep (convert_ops.cc).
  void ExecuteConvert(const Inst& in, Warp& warp, uint32_t mask);
  // setp and selp on integers and f32/f64 (compare_ops.cc).
  void ExecuteCompare(const Inst& in, Warp& warp, uint32_t mask);
  // add/sub/mul/mad/fma/div/rem/min/max/abs/neg/sad on integers and f32/f64, and the carry
  // forms (arith_ops.cc).
  void ExecuteArithmetic(const Inst& in, Warp& warp, uint32_t mask);
  // Logic, shifts and bit fields (bit_ops.cc).
  void ExecuteBits(const Inst& in, Warp& warp, uint32_t mask);
  // rcp/sqrt/rsqrt/sin/cos/ex2/lg2/tanh and copysign on f32/f64 (float_ops.cc).
  void ExecuteFloatFunction(const Inst& in, Warp& warp, uint32_t mask);
  // bra, brx, call, ret, exit, trap, bar.sync/arrive/red and fences for the lanes in `mask`
  // (control_ops.cc).
  Flow ExecuteControl(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  // f16/bf16 arithmetic, conversions and comparisons, and set (half_ops.cc).
  void ExecuteHalf(const Inst& in, Warp& warp, uint32_t mask);
  // mul24/mad24, dp4a/dp2a and the SIMD video instructions (narrow_int_ops.cc).
  void ExecuteNarrowInt(const Inst& in, Warp& warp, uint32_t mask);
  // wmma/mma/ldmatrix/stmatrix/movmatrix (matrix_ops.cc): `mask` must be the whole warp; false
  // after a fault.
  bool ExecuteMatrix(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);
  // shfl/vote/activemask for the lanes in `mask`.
  void ExecuteCollective(const Inst& in, Warp& warp, uint32_t mask);
  // barrier.cluster, mapa and getctarank for the lanes in `mask` (cluster_ops.cc); false after
  // a fault.
  bool ExecuteCluster(const Inst& in, Warp& warp, uint32_t mask, uint32_t pc);

  // Thread-block clusters of several CTAs: their runner (SmPool) runs all CTAs of a cluster on
  // one host thread, hands each the blocks of its cluster by rank (after Reset) and, after
  // every round, completes barrier.cluster's phase across them. A block of a one-CTA cluster
  // does that itself.
  void JoinCluster(Block* const* peers) { cluster_peers_ = peers; }
  // Completes barrier.cluster's current phase once every live thread of the cluster's
  // `count` blocks arrived, releasing the waiting lanes; true if it did.
  static bool ReleaseClusterBarrier(Block* const* blocks, uint32_t count);

 private:
  void PrepareLaunch(const LaunchSetup& setup);
  static void Schedule(Warp& warp);
  bool ReleaseBarriers();
  uint8_t* TranslateGlobal(uint64_t address, uint32_t size, uint32_t pc, bool write);
  // The common cases of Translate, inline: a kernel-parameter read, or a global (or generic
  // non-window) access inside the allocation this instruction hit last. nullptr when the full
  // Translate is needed; never for a store to the param space.
  uint8_t* CachedGlobal(Space space, uint64_t address, uint32_t size, uint32_t pc) {
    if (space == Space::kParam) {  // kernel parameters: read-only, checked by the caller
      if (address >= setup_->params.size() || size > setup_->params.size() - address) {
        return nullptr;
      }
      return const_cast<uint8_t*>(setup_->params.data()) + address;
    }
    if (space != Space::kGlobal && space != Space::kConst &&
        (space != Space::kGeneric || address - kSharedWindow < 3 * kWindowSize)) {
      return nullptr;
    }
    const AccessRange& range = access_cache_[pc];
    if (address < range.lo || address + size > range.hi) return nullptr;
    return reinterpret_cast<uint8_t*>(address);
  }
  // Another CTA's shared memory through a .shared::cluster address (program.h), or nullptr.
  uint8_t* TranslateClusterShared(uint32_t address, uint32_t size);
  std::string ThreadName(const Warp& warp, int lane) const;
  // Device printf and assert text: to the launch's tenant, or to this process's stdout/stderr.
  void Print(TenantOutput::Stream stream, std::string text) const;
  // Start of a lane's local memory: the kernel's variables, then its call stack.
  uint8_t* LaneLocal(const Warp& warp, int lane) {
    return local_.data() + uint64_t{warp.index * 32 + lane} * lane_local_bytes_;
  }
  // A `.param` call variable of the running function (at `offset` in its frame), and its value.
  uint8_t* CallVariable(const Warp& warp, int lane, uint64_t offset);
  uint64_t LocalWord(const Warp& warp, int lane, uint64_t offset, uint32_t size);
  bool ReadString(uint64_t address, const Warp& warp, int lane, uint32_t pc, std::string* out);
  class LaneArguments;  // printf's arguments (builtins.cc)
  bool ReadGeneric(uint64_t address, uint32_t size, const Warp& warp, int lane, uint32_t pc,
                   uint64_t* value);
  bool FormatPrintf(const Warp& warp, int lane, uint32_t pc, uint64_t format_address,
                    uint64_t arguments, std::string* out);

  const LaunchSetup* setup_ = nullptr;
  const Function* function_ = nullptr;
  Dim3 ctaid_;
  uint32_t sm_ = 0;  // the SM whose number %smid holds
  uint32_t threads_ = 0;
  uint32_t exited_ = 0;
  uint64_t writes_ = 0;
  uint64_t barrier_releases_ = 0;
  std::vector<uint64_t> registers_;
  std::vector<Warp> warps_;
  std::vector<uint8_t> shared_;
  LocalMemory local_;
  uint64_t lane_local_bytes_ = 0;  // the kernel's local variables and the call stack
  uint64_t stack_limit_ = 0;
  std::vector<AccessRange> access_cache_;
  // The cluster: this block's rank and the cluster's size, its blocks by rank (nullptr for a
  // one-CTA cluster), lanes that arrived at barrier.cluster in its current phase and lanes
  // blocked at barrier.cluster.wait (barrier_of_lane kClusterBarrier).
  static constexpr uint8_t kClusterBarrier = 16;
  uint32_t cluster_rank_ = 0, cluster_size_ = 1;
  Block* const* cluster_peers_ = nullptr;
  uint32_t cluster_arrivals_ = 0, cluster_waiting_ = 0;
  uint32_t arrived_[16] = {};
  uint32_t expected_[16] = {};  // 0: every thread of the block
  // bar.red state per barrier: its mode, threads that arrived through it, and their true votes.
  BarRedMode reduction_mode_[16] = {};
  uint32_t reduction_arrived_[16] = {};
  uint32_t reduction_votes_[16] = {};
  uint64_t cached_launch_ = 0;  // launch whose access ranges access_cache_ holds
  CUresult fault_code_ = CUDA_SUCCESS;
  std::string fault_;
  uint64_t lane_instructions_ = 0;
};

}  // namespace tally::emu::exec
