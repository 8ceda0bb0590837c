// The kernel runs a dispatcher has on the device, and how it learns that they ended: an
// original-form kernel it wants to hear about, one slice of a sliced kernel, one run of a PTB
// kernel. Each run is followed by an event on the launch's own stream, which Poll queries
// without blocking (cuEventQuery), so that nothing the driver runs on its own threads ever
// waits for the server (CUDA forbids CUDA calls in host functions, and may run all of them on
// one thread). A PTB kernel's task counter and preemption flag live in device memory: the flag
// is raised with cuStreamWriteValue32 on a control stream of the highest priority, which needs
// no SM (a memset kernel could wait behind the very workers it should stop), and after each
// run the counter is copied to page-locked memory on the launch's stream, before the event.
// Runs that the profiler wants timed get events with timing around them.
//
// Only the dispatch thread uses this class.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/strong_id.h"
#include "profiler/profiler.h"
#include "scheduler/types.h"
#include "server/backend/backend.h"
#include "server/busy_time.h"
#include "server/kernel_forms.h"
#include "server/latency_histograms.h"
#include "server/scheduling_stats.h"

namespace tally::server {

// Where a run reports: its client, and the counters it adds to.
struct RunOwner {
  ClientId client;
  SchedulingStats* stats = nullptr;  // outlives the client's runs (Dispatcher keeps it)
  ClassLatencyHistograms* latencies = nullptr;  // the client's class's; the Dispatcher's
  // Where the client's class's busy time is measured (the Dispatcher's), or null: every run is
  // then followed to its end, reported or not.
  BusyTime* busy = nullptr;
};

// A run that ended, as Poll reports it.
struct EndedRun {
  ClientId client;
  scheduler::RunEnd end;
  CUresult result = CUDA_SUCCESS;  // the kernel's failure, reported at the client's next sync
  std::string what;                // the failed launch, when result is not CUDA_SUCCESS
  // An original-form run that reports its end: when it ended on the device (steady clock, as
  // BusyTime::Now), from its timing events: its issue, or the end of its client's previous such
  // run if later, plus the time between its start and end events; at most the time of the poll
  // that found it ended. Polls back off to the dispatcher's max_poll, which may be longer than
  // the kernel; a policy that times kernels (priority-budget) needs their ends, not the polls'.
  // None when its events could not time it.
  std::optional<scheduler::Time> ended_at{};
};

class KernelRuns {
 public:
  // `profiler` may be null (no measurements are taken then).
  static absl::StatusOr<std::unique_ptr<KernelRuns>> Create(const Backend& backend,
                                                            profiler::Profiler* profiler);
  KernelRuns(const KernelRuns&) = delete;
  KernelRuns& operator=(const KernelRuns&) = delete;
  // The runs still on the device must have ended (the server waits for its clients first).
  ~KernelRuns();

  const DriverApi& api() const { return api_; }
  // What a policy sees of `launch`.
  scheduler::KernelInfo Describe(const KernelLaunch& launch);
  // The same for the head of the owner's queue, counting it among the owner's unfit launches
  // when the device cannot give a transformed form what the launch needs (the reason is logged
  // once per kernel and form).
  scheduler::KernelInfo DescribeHead(const RunOwner& owner, const KernelLaunch& launch);

  // The launch in its original form; with `notify` Poll reports its end.
  CUresult IssueOriginal(const RunOwner& owner, const KernelLaunch& launch, bool notify);
  // The next run of the owner's kernel in a transformed form: its first run in `form` when none
  // is under way (`launch` must then stay valid until Poll reports it finished), else its next
  // slice or its resumption. A launch without `form` (the analysis refused the kernel, or a
  // grid too large for 32-bit block numbers) runs in its original form and reports its end.
  CUresult IssueTransformed(const RunOwner& owner, const KernelLaunch& launch,
                            const scheduler::LaunchForm& form);
  // Raises the flag of the owner's running PTB kernel, if any.
  void Preempt(ClientId client);
  // The client is gone: its running PTB kernel is stopped, its runs are no longer reported,
  // and nothing of it is resumed. Its runs are still tracked until they end.
  void Forget(ClientId client);
  // Whether any run of the client is still on the device.
  bool HasRuns(ClientId client) const;
  bool empty() const { return runs_.empty(); }
  // Where a fault poisons the shared context (Backend::FaultsAreShared), every run is tracked,
  // reported or not, so that a fault can be attributed: the clients with runs not yet seen to
  // end, and (taken) those whose runs ended with a poisoning error since the last call.
  void AddClientsOnDevice(absl::flat_hash_set<ClientId>& clients) const;
  void TakeFaultedClients(absl::flat_hash_set<ClientId>& clients);
  // The first poisoning error a run ended with, or the call after its launch answered
  // (CUDA_SUCCESS while none did).
  CUresult first_fault() const { return first_fault_; }

  // Appends the runs that ended since the last call (and drops finished transformed kernels).
  void Poll(std::vector<EndedRun>& ended);

 private:
  struct Transformed;
  struct DeviceRun;
  struct PtbSlot {
    CUdeviceptr state = 0;  // ptx::PtbState, device memory
    ptx::PtbState* readback = nullptr;  // page-locked: the state after the last run
  };

  KernelRuns(const Backend& backend, profiler::Profiler* profiler, CUstream control,
             uint32_t sm_count);
  // Counts a kernel issued in its original form (a vendor call is no kernel: not counted).
  static void CountOriginal(const RunOwner& owner, const KernelLaunch& launch);
  CUresult StartTransformed(const RunOwner& owner, const KernelLaunch& launch,
                            const scheduler::LaunchForm& form);
  CUresult IssueSlice(Transformed& kernel);
  CUresult IssuePtbRun(Transformed& kernel);
  using TransformedKernels = absl::flat_hash_map<ClientId, std::unique_ptr<Transformed>>;
  // Removes a client's transformed kernel, a PTB kernel's state back to the free slots (a sliced
  // kernel has none: its empty slot handed out would leave the next PTB kernel without one).
  void Drop(TransformedKernels::iterator it);
  // Records the events that end a run on the launch's stream and tracks it.
  CUresult Track(DeviceRun run, const KernelLaunch& launch);
  // A run of `client` went to the device, but the call after its launch answered `result`: if
  // that is the shared context's fault, the run (which may be its cause: a kernel can fault
  // before the call after its launch) counts as one that ended with it.
  void NoteUnfollowed(ClientId client, CUresult result);
  // The report of a run that ended (`state`: its event's), if its client hears of it; `polled`:
  // when the poll found it ended.
  std::optional<EndedRun> Finish(DeviceRun& run, CUresult state, scheduler::Time polled);
  // EndedRun::ended_at of a reported original-form run.
  std::optional<scheduler::Time> EndedAt(const DeviceRun& run, scheduler::Time polled);
  EndedRun EndTransformed(DeviceRun& run, Transformed& kernel);
  // Gives the profiler what the run measured (`kernel`: null for an original-form kernel).
  void Measure(const DeviceRun& run, Transformed* kernel);
  // A PTB state for a kernel of `client`: on the emulated GPU only that client's kernels may
  // touch it while it has it (slots are reused).
  absl::StatusOr<PtbSlot> AcquireSlot(ClientId client);
  // A free slot, or a new one.
  absl::StatusOr<PtbSlot> TakeSlot();
  uint32_t ResidentPerSm(const KernelLaunch& launch);
  // Whether a launch with `shared_bytes` of dynamic shared memory can use `variant`.
  // Why `variant` cannot run `launch` on the device, or "" when it can.
  std::string Unfit(const KernelVariant& variant, const KernelLaunch& launch) const;
  absl::StatusOr<CUevent> AcquireEvent();
  void ReleaseEvent(CUevent event);
  // An event recorded on `stream` now (a run's start, for timing), or null when none could be.
  CUevent RecordNow(CUstream stream);

  const DriverApi& api_;
  const EmulatorExtensions& extensions_;
  profiler::Profiler* const profiler_;
  const CUstream control_;  // highest priority: raises preemption flags
  const uint32_t sm_count_;
  const bool track_all_;  // Backend::FaultsAreShared
  absl::flat_hash_set<ClientId> faulted_clients_;  // TakeFaultedClients
  CUresult first_fault_ = CUDA_SUCCESS;
  std::vector<DeviceRun> runs_;  // on the device, in issue order
  // Per client, the latest EndedRun::ended_at reported (a client's runs end in issue order).
  absl::flat_hash_map<ClientId, scheduler::Time> last_ended_at_;
  TransformedKernels transformed_;
  std::vector<CUevent> free_events_;  // all with timing
  std::vector<PtbSlot> free_slots_;
  std::vector<PtbSlot> slots_;  // every slot, for the destructor
  // Resident blocks per SM of PTB variants, by (function, threads per block, shared memory).
  absl::flat_hash_map<std::tuple<CUfunction, uint32_t, uint32_t>, uint32_t> occupancy_;
  absl::flat_hash_set<CUfunction> unfit_logged_;  // variants whose unfit launch was logged
};

}  // namespace tally::server
