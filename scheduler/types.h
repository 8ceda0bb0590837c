// What scheduling policies reason about: time, kernel launches and their forms, the heads of
// client queues, the ends of runs, and the actions a policy answers with.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/client_priority.h"
#include "common/strong_id.h"

namespace tally::scheduler {

// A point in time on the driver's clock (real time in the server, virtual time in the
// simulator), as the time since that clock's epoch.
using Time = std::chrono::nanoseconds;
using Duration = std::chrono::nanoseconds;

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t Count() const { return uint64_t{x} * y * z; }
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

// The form in which a kernel launch runs (ARCHITECTURE.md, "Transformations").
enum class FormKind : uint8_t { kOriginal, kSliced, kPreemptible };

struct LaunchForm {
  FormKind kind = FormKind::kOriginal;
  uint32_t slices = 0;   // kSliced: consecutive pieces of the grid, issued one at a time
  uint32_t workers = 0;  // kPreemptible: worker blocks; 0 for as many as can be resident
  // kSliced, when not 0: the next slice is this many blocks (or the rest of the grid, if
  // fewer), its size chosen anew at each issue (priority-budget sizes them to its allowance).
  uint32_t slice_blocks = 0;
  friend bool operator==(const LaunchForm&, const LaunchForm&) = default;

  static constexpr LaunchForm Original() { return {}; }
  static constexpr LaunchForm Sliced(uint32_t slices) { return {FormKind::kSliced, slices, 0}; }
  static constexpr LaunchForm Preemptible(uint32_t workers = 0) {
    return {FormKind::kPreemptible, 0, workers};
  }
  static constexpr LaunchForm Slice(uint32_t blocks) { return {FormKind::kSliced, 0, 0, blocks}; }
  bool sized_slice() const { return kind == FormKind::kSliced && slice_blocks > 0; }
};

// What identifies a launch configuration for the profiler: the kernel (its module's content
// hash combined with its name) and the launch's shape.
struct KernelShape {
  KernelId kernel;
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes = 0;  // dynamic shared memory
  friend bool operator==(const KernelShape&, const KernelShape&) = default;
  template <typename H>
  friend H AbslHashValue(H state, const KernelShape& s) {
    return H::combine(std::move(state), s.kernel, s.grid.x, s.grid.y, s.grid.z, s.block.x,
                      s.block.y, s.block.z, s.shared_bytes);
  }
};

// What a policy sees of a kernel launch.
struct KernelInfo {
  KernelShape shape;
  bool sliceable = false;    // has a sliced form
  bool preemptible = false;  // has a PTB form
  // Blocks per SM the PTB form can keep resident (occupancy), and the device's SMs: what the
  // candidates' worker counts are made of. 0 when unknown.
  uint32_t resident_per_sm = 0;
  uint32_t sm_count = 0;
  // Its transformed forms are not made yet (they are made once the policy would run the client's
  // kernels shaped, Policy::WaitsForForms): sliceable and preemptible say nothing yet, and the
  // driver tells the policy the kernel anew (Policy::HeadUpdated) once they are made, or given up.
  bool forms_pending = false;

  // A wave: the blocks the device runs at once, resident_per_sm x sm_count (the PTB form's
  // occupancy, taken for every form); 0 when unknown.
  uint64_t WaveBlocks() const { return uint64_t{resident_per_sm} * sm_count; }
  // The waves `blocks` of its blocks take, a part wave counting whole (it takes as long as a
  // whole one while its blocks run side by side); 0 when the wave is unknown.
  uint64_t Waves(uint64_t blocks) const {
    const uint64_t wave = WaveBlocks();
    return wave == 0 ? 0 : (blocks + wave - 1) / wave;
  }
};

// The head of a client's ordered command queue: a kernel launch, or other stream work (copies,
// memsets, event records, host functions), which is never shaped.
struct Head {
  enum class Kind : uint8_t { kKernel, kOther };
  Kind kind = Kind::kOther;
  KernelInfo kernel;  // kKernel

  static Head Other() { return {}; }
  static Head Kernel(const KernelInfo& info) { return {Kind::kKernel, info}; }
};

// The end of one run on the device: an original-form kernel the policy asked to hear about, one
// slice, or one run of a PTB kernel (to completion or stopped by a preemption).
struct RunEnd {
  FormKind form = FormKind::kOriginal;
  // The whole kernel is done: its head is consumed and the client's next head follows.
  bool finished = true;
  uint64_t blocks_done = 0;   // of the kernel so far
  uint64_t blocks_total = 0;  // of the kernel
};

// What a policy asks the driver to do.
struct Action {
  enum class Kind : uint8_t {
    // Issue the client's head: other work, or a kernel in `form`. A kernel already started
    // (sliced, or a preempted PTB kernel) goes on in the form it started with: its next slice,
    // or its resumption from the task counter, with the workers of this `form` when it is PTB.
    // A kernel started in sized slices (LaunchForm::Slice) runs its next slice with this
    // `form`'s slice_blocks.
    kIssue,
    // Raise the preemption flag of the client's running PTB kernel.
    kPreempt,
  };
  Kind kind = Kind::kIssue;
  ClientId client;
  LaunchForm form;
  // kIssue of an original-form kernel: report its completion with RunEnded. (Transformed forms
  // always report each run.)
  bool notify = false;
  // kIssue: the client is in the foreground (no connected client is more important); the driver
  // issues its work on the device's highest-priority streams.
  bool foreground = false;
  // kIssue of a background kernel in its original form that is not known to be short: it
  // runs after a long idle period, at the risk of delaying more important work.
  bool risky = false;
  friend bool operator==(const Action&, const Action&) = default;
};

// Where a policy writes its answer to one event.
class Decisions {
 public:
  void Issue(ClientId client, LaunchForm form = {}, bool notify = false, bool foreground = false,
             bool risky = false) {
    actions_.push_back({Action::Kind::kIssue, client, form, notify, foreground, risky});
  }
  void Preempt(ClientId client) { actions_.push_back({Action::Kind::kPreempt, client, {}}); }
  // Asks to be woken (Policy::Woken) at `time` or later; the earliest request wins.
  void WakeAt(Time time) {
    if (!wake_ || time < *wake_) wake_ = time;
  }

  std::span<const Action> actions() const { return actions_; }
  std::optional<Time> wake() const { return wake_; }
  void Clear() {
    actions_.clear();
    wake_.reset();
  }

 private:
  std::vector<Action> actions_;
  std::optional<Time> wake_;
};

}  // namespace tally::scheduler
