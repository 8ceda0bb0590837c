// Issuing runs of kernels in each form and noticing their ends. A transformed kernel holds its
// client's queue until it finished (server/dispatcher.h), so its runs are the only work of the
// client on its stream meanwhile: a stopped PTB kernel is resumed on the same stream, and the
// client's later work there sees its full result.
#include "server/kernel_runs.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "server/context_faults.h"
#include "server/cuda_result.h"

namespace tally::server {

using scheduler::FormKind;
using scheduler::LaunchForm;

// A kernel under way in a transformed form.
struct KernelRuns::Transformed {
  RunOwner owner;
  const KernelLaunch* launch = nullptr;
  scheduler::KernelInfo info;
  LaunchForm form;  // as the policy asked for it (the profiler's candidate)
  uint32_t total = 0;  // blocks of the original grid
  uint64_t blocks_done = 0;
  bool in_flight = false;
  bool forgotten = false;
  // Sliced: planned at the start, or (form.sized_slice()) each the size its issue asks for.
  std::vector<ptx::Slice> slices;
  size_t next_slice = 0;
  // PTB.
  PtbSlot slot;
  uint32_t workers = 0;
  std::vector<uint8_t> ptb_params;
  uint32_t runs = 0;
  bool raised = false;     // the flag is up for the run in flight
  bool preempted = false;  // some run stopped early
  // Measurement: every run timed and none preempted (then time and turnaround are valid).
  bool measure = false;
  scheduler::Duration time{0};
  scheduler::Duration turnaround{0};
};

// One run on the device.
struct KernelRuns::DeviceRun {
  RunOwner owner;
  FormKind form = FormKind::kOriginal;  // as reported to the policy
  bool transformed = false;  // a run of transformed_[owner.client]
  bool notify = true;        // report its end (an original-form kernel may be timed only)
  bool forgotten = false;
  uint32_t slice_blocks = 0;
  uint64_t blocks_total = 0;
  CUevent start = nullptr;       // timing: when measured, or when its end is reported (original)
  scheduler::Time issued{0};     // original form reporting its end: just before `start`
  CUevent kernel_end = nullptr;  // PTB: right after the kernel, before the readback
  CUevent raised = nullptr;      // PTB: on the control stream, when the flag went up
  CUevent reset = nullptr;       // PTB: on the control stream, after the flag was lowered
  CUevent done = nullptr;        // after everything of the run
  std::optional<scheduler::KernelInfo> measured;  // original form: what was timed
  std::string name;                               // ... its kernel
  std::string what;                               // the launch, for a failure message
};

absl::StatusOr<std::unique_ptr<KernelRuns>> KernelRuns::Create(const Backend& backend,
                                                               profiler::Profiler* profiler) {
  const DriverApi& api = backend.api();
  int sms = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(
      api.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, backend.device()),
      "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"));
  int least = 0;
  int greatest = 0;
  TALLY_RETURN_IF_ERROR(CheckCu(api.cuCtxGetStreamPriorityRange(&least, &greatest),
                                "cuCtxGetStreamPriorityRange"));
  CUstream control = nullptr;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api.cuStreamCreateWithPriority(&control, CU_STREAM_NON_BLOCKING, greatest),
              "cuStreamCreateWithPriority (control stream)"));
  return std::unique_ptr<KernelRuns>(
      new KernelRuns(backend, profiler, control, static_cast<uint32_t>(std::max(sms, 1))));
}

KernelRuns::KernelRuns(const Backend& backend, profiler::Profiler* profiler, CUstream control,
                       uint32_t sm_count)
    : api_(backend.api()),
      extensions_(backend.extensions()),
      profiler_(profiler),
      control_(control),
      sm_count_(sm_count),
      track_all_(backend.FaultsAreShared()) {}

KernelRuns::~KernelRuns() {
  // Only at shutdown with a run still on the device (a client's kernel that never ends, whose
  // resources were abandoned): wait a while, so that the PTB state outlives it, but never hang.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const auto ended = [&](CUevent event) {
    while (api_.cuEventQuery(event) == CUDA_ERROR_NOT_READY) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  };
  bool all_ended = true;
  for (DeviceRun& run : runs_) all_ended = all_ended && ended(run.done);
  if (!all_ended) {
    TALLY_LOG_ERROR("tally-server: kernels still run at shutdown; their state is left allocated");
    return;
  }
  api_.cuStreamSynchronize(control_);
  for (const auto& run : runs_) {
    for (CUevent event : {run.start, run.kernel_end, run.raised, run.reset, run.done}) {
      if (event != nullptr) api_.cuEventDestroy(event);
    }
  }
  for (CUevent event : free_events_) api_.cuEventDestroy(event);
  for (const PtbSlot& slot : slots_) {
    api_.cuMemFree(slot.state);
    api_.cuMemFreeHost(slot.readback);
  }
  api_.cuStreamDestroy(control_);
}

uint32_t KernelRuns::ResidentPerSm(const KernelLaunch& launch) {
  if (!launch.kernel->preemptible) return 0;
  const uint32_t threads = launch.block.x * launch.block.y * launch.block.z;
  const CUfunction function = launch.kernel->preemptible->function;
  const auto key = std::make_tuple(function, threads, launch.shared_bytes);
  if (auto it = occupancy_.find(key); it != occupancy_.end()) return it->second;
  int per_sm = 0;
  if (api_.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, function, static_cast<int>(threads),
                                                       launch.shared_bytes) != CUDA_SUCCESS) {
    per_sm = 0;
  }
  occupancy_[key] = static_cast<uint32_t>(std::max(per_sm, 0));
  return static_cast<uint32_t>(std::max(per_sm, 0));
}

std::string KernelRuns::Unfit(const KernelVariant& variant, const KernelLaunch& launch) const {
  const uint32_t threads = launch.block.x * launch.block.y * launch.block.z;
  if (threads > variant.max_threads_per_block) {
    return absl::StrFormat("takes at most %d threads per block", variant.max_threads_per_block);
  }
  // Up to 48 KiB of shared memory in all every kernel may take (CUDA C++ Programming Guide,
  // "Shared Memory"); beyond, what cuFuncSetAttribute allowed the variant (AllowDynamicShared).
  constexpr uint32_t kWithoutOptIn = 48 * 1024;
  if (variant.static_shared_bytes + uint64_t{launch.shared_bytes} <= kWithoutOptIn) return "";
  int allowed = 0;
  if (api_.cuFuncGetAttribute(&allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              variant.function) == CUDA_SUCCESS &&
      launch.shared_bytes <= static_cast<uint32_t>(std::max(allowed, 0))) {
    return "";
  }
  return absl::StrFormat(
      "has %d bytes of static shared memory of its own, and the device gives it at most %d "
      "bytes of dynamic shared memory beside them",
      variant.static_shared_bytes, allowed);
}

namespace {

// Whether the launch's transformed forms may be read: not while the background worker may still
// be writing them (Kernel::forms_pending), and a launch that only its original form can run
// has none to read.
bool FormsReadable(const KernelLaunch& launch) {
  return !launch.OriginalOnly() && !launch.kernel->forms_pending.get();
}

}  // namespace

scheduler::KernelInfo KernelRuns::Describe(const KernelLaunch& launch) {
  scheduler::KernelInfo info;
  info.shape.kernel = launch.vendor ? launch.vendor->identity : launch.kernel->identity;
  info.shape.grid = {launch.grid.x, launch.grid.y, launch.grid.z};
  info.shape.block = {launch.block.x, launch.block.y, launch.block.z};
  info.shape.shared_bytes = launch.shared_bytes;
  // Variants number blocks with 32-bit integers; cooperative grids must be resident at once;
  // clusters set at the launch keep their original form.
  const bool transformable = FormsReadable(launch) && ptx::LinearBlockCount(launch.grid).ok();
  info.sliceable = transformable && launch.kernel->sliced.has_value() &&
                   Unfit(*launch.kernel->sliced, launch).empty();
  info.preemptible = transformable && launch.kernel->preemptible.has_value() &&
                     Unfit(*launch.kernel->preemptible, launch).empty();
  info.resident_per_sm = info.preemptible ? ResidentPerSm(launch) : 0;
  info.sm_count = sm_count_;
  if (info.preemptible && info.resident_per_sm == 0) info.preemptible = false;  // cannot run
  return info;
}

scheduler::KernelInfo KernelRuns::DescribeHead(const RunOwner& owner, const KernelLaunch& launch) {
  const scheduler::KernelInfo info = Describe(launch);
  if (!FormsReadable(launch)) return info;
  bool unfit = false;
  for (const auto& [variant, form] :
       {std::pair{&launch.kernel->sliced, "sliced"}, {&launch.kernel->preemptible, "PTB"}}) {
    if (!variant->has_value()) continue;
    const std::string why = Unfit(**variant, launch);
    if (why.empty()) continue;
    unfit = true;
    if (unfit_logged_.insert((*variant)->function).second) {
      TALLY_LOG_WARN("{} keeps its original form: its {} form {}", DescribeLaunch(launch), form,
                     why);
    }
  }
  if (unfit) ++owner.stats->unfit;
  return info;
}

absl::StatusOr<CUevent> KernelRuns::AcquireEvent() {
  if (!free_events_.empty()) {
    CUevent event = free_events_.back();
    free_events_.pop_back();
    return event;
  }
  CUevent event = nullptr;
  TALLY_RETURN_IF_ERROR(CheckCu(api_.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
  return event;
}

CUevent KernelRuns::RecordNow(CUstream stream) {
  absl::StatusOr<CUevent> event = AcquireEvent();
  if (!event.ok()) return nullptr;
  if (api_.cuEventRecord(*event, stream) != CUDA_SUCCESS) {
    ReleaseEvent(*event);
    return nullptr;
  }
  return *event;
}

void KernelRuns::ReleaseEvent(CUevent event) {
  if (event != nullptr) free_events_.push_back(event);
}

absl::StatusOr<KernelRuns::PtbSlot> KernelRuns::AcquireSlot(ClientId client) {
  TALLY_ASSIGN_OR_RETURN(PtbSlot slot, TakeSlot());
  if (extensions_.mem_set_tenant != nullptr) {
    const CUresult claimed = extensions_.mem_set_tenant(slot.state, client.value());
    if (claimed != CUDA_SUCCESS) {
      free_slots_.push_back(slot);
      return CheckCu(claimed, "tallyEmuMemSetTenant (PTB state)");
    }
  }
  return slot;
}

absl::StatusOr<KernelRuns::PtbSlot> KernelRuns::TakeSlot() {
  if (!free_slots_.empty()) {
    PtbSlot slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  PtbSlot slot;
  TALLY_RETURN_IF_ERROR(
      CheckCu(api_.cuMemAlloc(&slot.state, sizeof(ptx::PtbState)), "cuMemAlloc (PTB state)"));
  void* host = nullptr;
  const CUresult pinned = api_.cuMemHostAlloc(&host, sizeof(ptx::PtbState), 0);
  if (pinned != CUDA_SUCCESS) {
    api_.cuMemFree(slot.state);
    return CheckCu(pinned, "cuMemHostAlloc (PTB readback)");
  }
  slot.readback = static_cast<ptx::PtbState*>(host);
  slots_.push_back(slot);
  return slot;
}

CUresult KernelRuns::Track(DeviceRun run, const KernelLaunch& launch) {
  absl::StatusOr<CUevent> done = AcquireEvent();
  const CUresult result =
      done.ok() ? api_.cuEventRecord(*done, launch.stream) : CUDA_ERROR_OUT_OF_MEMORY;
  if (result != CUDA_SUCCESS) {
    // The run is on the device but cannot be followed (the context is broken): its events go
    // back, the caller gives up on the kernel.
    NoteUnfollowed(run.owner.client, result);
    for (CUevent event : {run.start, run.kernel_end, run.reset}) ReleaseEvent(event);
    if (done.ok()) ReleaseEvent(*done);
    return result;
  }
  run.done = *done;
  if (run.owner.busy != nullptr) run.owner.busy->Started(BusyTime::Now());
  runs_.push_back(std::move(run));
  return CUDA_SUCCESS;
}

void KernelRuns::CountOriginal(const RunOwner& owner, const KernelLaunch& launch) {
  if (!launch.vendor) ++owner.stats->original;  // a vendor call counts as a library call
}

CUresult KernelRuns::IssueOriginal(const RunOwner& owner, const KernelLaunch& launch,
                                   bool notify) {
  CountOriginal(owner, launch);
  std::optional<scheduler::KernelInfo> measured;
  CUevent start = nullptr;
  if (profiler_ != nullptr && !launch.OriginalOnly()) {
    scheduler::KernelInfo info = Describe(launch);
    if (profiler_->WantsMeasurement(info, LaunchForm::Original())) {
      start = RecordNow(launch.stream);
      if (start != nullptr) measured = info;
    }
  }
  // A reported end is timed by the run's events (EndedRun::ended_at).
  const scheduler::Time issued = BusyTime::Now();
  if (notify && start == nullptr) start = RecordNow(launch.stream);
  const CUresult launched = LaunchOriginal(api_, launch);
  if (launched != CUDA_SUCCESS || (!notify && !measured && !track_all_ && owner.busy == nullptr)) {
    ReleaseEvent(start);
    return launched;
  }
  DeviceRun run;
  run.owner = owner;
  run.notify = notify;
  run.blocks_total = launch.grid.x * uint64_t{launch.grid.y} * launch.grid.z;
  run.start = start;
  run.issued = issued;
  run.measured = std::move(measured);
  if (run.measured) run.name = LaunchName(launch);
  return Track(std::move(run), launch);
}

CUresult KernelRuns::IssueTransformed(const RunOwner& owner, const KernelLaunch& launch,
                                      const LaunchForm& form) {
  auto it = transformed_.find(owner.client);
  if (it == transformed_.end()) return StartTransformed(owner, launch, form);
  Transformed& kernel = *it->second;
  if (kernel.in_flight) {
    TALLY_LOG_ERROR("client {}: the policy issued a run of {} while one is on the device",
                    owner.client.value(), DescribeLaunch(*kernel.launch));
    return CUDA_SUCCESS;
  }
  if (kernel.form.kind == FormKind::kSliced) {
    if (kernel.form.sized_slice() && form.sized_slice()) kernel.form = form;
    return IssueSlice(kernel);
  }
  ++owner.stats->resumes;
  if (form.kind == FormKind::kPreemptible) {
    // A resumption as wide as the policy says now (priority-budget narrows a kernel beside more
    // important work and widens it when that is idle): the task counter goes on either way.
    kernel.form = form;
    kernel.workers =
        ptx::PtbWorkerCount(kernel.info.resident_per_sm, sm_count_, kernel.total, form.workers);
  }
  return IssuePtbRun(kernel);
}

CUresult KernelRuns::StartTransformed(const RunOwner& owner, const KernelLaunch& launch,
                                      const LaunchForm& form) {
  const scheduler::KernelInfo info = Describe(launch);
  const bool available = (form.kind == FormKind::kSliced && info.sliceable) ||
                         (form.kind == FormKind::kPreemptible && info.preemptible);
  if (!available) {
    // Reported as a finished run of the form asked for, so that the policy moves on.
    CountOriginal(owner, launch);
    const CUresult launched = LaunchOriginal(api_, launch);
    if (launched != CUDA_SUCCESS) return launched;
    DeviceRun run;
    run.owner = owner;
    run.form = form.kind;
    run.blocks_total = info.shape.grid.Count();
    return Track(std::move(run), launch);
  }
  auto kernel = std::make_unique<Transformed>();
  kernel->owner = owner;
  kernel->launch = &launch;
  kernel->info = info;
  kernel->form = form;
  kernel->total = *ptx::LinearBlockCount(launch.grid);
  // Slices sized by the policy are no candidate of the profiler's.
  kernel->measure =
      profiler_ != nullptr && !form.sized_slice() && profiler_->WantsMeasurement(info, form);
  Transformed& started = *kernel;
  if (form.sized_slice()) {
    ++owner.stats->sliced;
    transformed_[owner.client] = std::move(kernel);
    return IssueSlice(started);
  }
  if (form.kind == FormKind::kSliced) {
    const uint32_t slices = std::clamp<uint32_t>(form.slices, 1, started.total);
    const uint32_t per_slice = (started.total + slices - 1) / slices;
    auto plan = ptx::PlanSlices(launch.grid, per_slice);
    if (!plan.ok()) {
      TALLY_LOG_ERROR("{}: {}", DescribeLaunch(launch), plan.status().ToString());
      return CUDA_ERROR_INVALID_VALUE;
    }
    started.slices = *std::move(plan);
    ++owner.stats->sliced;
    transformed_[owner.client] = std::move(kernel);
    return IssueSlice(started);
  }
  absl::StatusOr<PtbSlot> slot = AcquireSlot(owner.client);
  if (!slot.ok()) {
    TALLY_LOG_ERROR("{}: {}", DescribeLaunch(launch), slot.status().ToString());
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto params = ptx::PreemptibleParams(launch.kernel->preemptible->signature,
                                       ArgumentPointers(launch), slot->state, launch.grid);
  if (!params.ok()) {
    free_slots_.push_back(*slot);
    TALLY_LOG_ERROR("{}: {}", DescribeLaunch(launch), params.status().ToString());
    return CUDA_ERROR_INVALID_VALUE;
  }
  started.slot = *slot;
  started.ptb_params = *std::move(params);
  started.workers =
      ptx::PtbWorkerCount(info.resident_per_sm, sm_count_, started.total, form.workers);
  ++owner.stats->preemptible;
  transformed_[owner.client] = std::move(kernel);
  return IssuePtbRun(started);
}

CUresult KernelRuns::IssueSlice(Transformed& kernel) {
  const KernelLaunch& launch = *kernel.launch;
  const KernelVariant& sliced = *launch.kernel->sliced;
  // One run at a time: the blocks done are those issued before.
  const ptx::Slice slice =
      kernel.form.sized_slice()
          ? ptx::Slice{static_cast<uint32_t>(kernel.blocks_done),
                       std::min(kernel.form.slice_blocks,
                                kernel.total - static_cast<uint32_t>(kernel.blocks_done))}
          : kernel.slices[kernel.next_slice];
  auto params = ptx::SlicedParams(sliced.signature, ArgumentPointers(launch), slice, launch.grid);
  if (!params.ok()) {
    TALLY_LOG_ERROR("{}: {}", sliced.signature.name, params.status().ToString());
    transformed_.erase(kernel.owner.client);
    return CUDA_ERROR_INVALID_VALUE;
  }
  DeviceRun run;
  run.owner = kernel.owner;
  run.form = FormKind::kSliced;
  run.transformed = true;
  run.slice_blocks = slice.blocks;
  run.blocks_total = kernel.total;
  if (kernel.measure) {
    run.start = RecordNow(launch.stream);
    kernel.measure = run.start != nullptr;
  }
  const CUresult launched =
      LaunchVariant(api_, launch, sliced.function, {slice.blocks, 1, 1}, *params);
  if (launched != CUDA_SUCCESS) {
    ReleaseEvent(run.start);
    transformed_.erase(kernel.owner.client);
    return launched;
  }
  ++kernel.owner.stats->slices;
  ++kernel.next_slice;
  const CUresult tracked = Track(std::move(run), launch);
  if (tracked != CUDA_SUCCESS) {
    transformed_.erase(kernel.owner.client);
    return tracked;
  }
  kernel.in_flight = true;
  return CUDA_SUCCESS;
}

CUresult KernelRuns::IssuePtbRun(Transformed& kernel) {
  const KernelLaunch& launch = *kernel.launch;
  const RunOwner owner = kernel.owner;
  const auto fail = [&](CUresult result) {
    Drop(transformed_.find(owner.client));  // destroys `kernel`
    return result;
  };
  // The flag (and before the first run the counter) start at 0. They are written on the control
  // stream, where a preemption raised later queues behind them (written on the launch's stream,
  // a reset could land after the raise and lose it), and the run waits for them.
  absl::StatusOr<CUevent> reset = AcquireEvent();
  if (!reset.ok()) return fail(CUDA_ERROR_OUT_OF_MEMORY);
  CUresult result = CUDA_SUCCESS;
  if (kernel.runs == 0) {
    result = api_.cuStreamWriteValue32(control_, kernel.slot.state + offsetof(ptx::PtbState, next_task),
                                       0, CU_STREAM_WRITE_VALUE_DEFAULT);
  }
  if (result == CUDA_SUCCESS) {
    result = api_.cuStreamWriteValue32(control_, kernel.slot.state + offsetof(ptx::PtbState, preempt),
                                       0, CU_STREAM_WRITE_VALUE_DEFAULT);
  }
  if (result == CUDA_SUCCESS) result = api_.cuEventRecord(*reset, control_);
  if (result == CUDA_SUCCESS) result = api_.cuStreamWaitEvent(launch.stream, *reset, 0);
  if (result != CUDA_SUCCESS) {
    ReleaseEvent(*reset);
    return fail(result);
  }
  kernel.raised = false;
  DeviceRun run;
  run.reset = *reset;
  run.owner = owner;
  run.form = FormKind::kPreemptible;
  run.transformed = true;
  run.blocks_total = kernel.total;
  absl::StatusOr<CUevent> kernel_end = AcquireEvent();
  if (!kernel_end.ok()) return fail(CUDA_ERROR_OUT_OF_MEMORY);
  run.kernel_end = *kernel_end;
  if (kernel.measure && kernel.runs == 0) {
    run.start = RecordNow(launch.stream);
    kernel.measure = run.start != nullptr;
  }
  result = LaunchVariant(api_, launch, launch.kernel->preemptible->function,
                         {kernel.workers, 1, 1}, kernel.ptb_params);
  if (result == CUDA_SUCCESS) {
    result = api_.cuEventRecord(run.kernel_end, launch.stream);
    if (result == CUDA_SUCCESS) {
      result = api_.cuMemcpyDtoHAsync(kernel.slot.readback, kernel.slot.state,
                                      sizeof(ptx::PtbState), launch.stream);
    }
    NoteUnfollowed(owner.client, result);
  }
  if (result != CUDA_SUCCESS) {
    for (CUevent event : {run.start, run.kernel_end, run.reset}) ReleaseEvent(event);
    return fail(result);
  }
  ++kernel.runs;
  const CUresult tracked = Track(std::move(run), launch);
  if (tracked != CUDA_SUCCESS) {
    // The slot may still be in use on the device: it is not reused.
    transformed_.erase(owner.client);
    return tracked;
  }
  kernel.in_flight = true;
  return CUDA_SUCCESS;
}

void KernelRuns::Preempt(ClientId client) {
  auto it = transformed_.find(client);
  if (it == transformed_.end()) return;
  Transformed& kernel = *it->second;
  if (!kernel.in_flight || kernel.form.kind != FormKind::kPreemptible || kernel.raised) return;
  kernel.raised = true;
  ++kernel.owner.stats->preemptions;
  const CUresult raised = api_.cuStreamWriteValue32(
      control_, kernel.slot.state + offsetof(ptx::PtbState, preempt), 1,
      CU_STREAM_WRITE_VALUE_DEFAULT);
  if (raised != CUDA_SUCCESS) {
    TALLY_LOG_ERROR("client {}: raising the preemption flag failed: {}", client.value(),
                    CuResultText(raised));
    return;
  }
  // The moment the flag is written, for the measured preemption latency.
  auto run = std::find_if(runs_.rbegin(), runs_.rend(),
                          [&](const DeviceRun& r) { return r.transformed && r.owner.client == client; });
  if (run == runs_.rend() || run->raised != nullptr) return;
  absl::StatusOr<CUevent> event = AcquireEvent();
  if (!event.ok()) return;
  if (api_.cuEventRecord(*event, control_) == CUDA_SUCCESS) {
    run->raised = *event;
  } else {
    ReleaseEvent(*event);
  }
}

void KernelRuns::Forget(ClientId client) {
  Preempt(client);
  last_ended_at_.erase(client);
  for (DeviceRun& run : runs_) {
    if (run.owner.client == client) run.forgotten = true;
  }
  auto it = transformed_.find(client);
  if (it == transformed_.end()) return;
  it->second->forgotten = true;
  if (!it->second->in_flight) Drop(it);
}

void KernelRuns::Drop(TransformedKernels::iterator it) {
  if (it->second->form.kind == FormKind::kPreemptible) free_slots_.push_back(it->second->slot);
  transformed_.erase(it);
}

bool KernelRuns::HasRuns(ClientId client) const {
  return std::any_of(runs_.begin(), runs_.end(),
                     [&](const DeviceRun& run) { return run.owner.client == client; });
}

void KernelRuns::Poll(std::vector<EndedRun>& ended) {
  std::optional<scheduler::Time> now;  // read once, at the first run that ended
  size_t kept = 0;
  for (size_t i = 0; i < runs_.size(); ++i) {
    DeviceRun& run = runs_[i];
    const CUresult state = api_.cuEventQuery(run.done);
    if (state == CUDA_ERROR_NOT_READY) {
      if (kept != i) runs_[kept] = std::move(run);
      ++kept;
      continue;
    }
    if (ContextFaults::Poisons(state)) {
      faulted_clients_.insert(run.owner.client);
      if (first_fault_ == CUDA_SUCCESS) first_fault_ = state;
    }
    if (!now) now = BusyTime::Now();
    if (run.owner.busy != nullptr) run.owner.busy->Ended(*now);
    if (std::optional<EndedRun> end = Finish(run, state, *now)) ended.push_back(std::move(*end));
  }
  runs_.resize(kept);
}

void KernelRuns::NoteUnfollowed(ClientId client, CUresult result) {
  if (!track_all_ || !ContextFaults::Poisons(result)) return;
  faulted_clients_.insert(client);
  if (first_fault_ == CUDA_SUCCESS) first_fault_ = result;
}

void KernelRuns::AddClientsOnDevice(absl::flat_hash_set<ClientId>& clients) const {
  for (const DeviceRun& run : runs_) clients.insert(run.owner.client);
}

void KernelRuns::TakeFaultedClients(absl::flat_hash_set<ClientId>& clients) {
  clients.insert(faulted_clients_.begin(), faulted_clients_.end());
  faulted_clients_.clear();
}

std::optional<EndedRun> KernelRuns::Finish(DeviceRun& run, CUresult state, scheduler::Time polled) {
  std::optional<EndedRun> result;
  if (run.transformed) {
    auto it = transformed_.find(run.owner.client);
    if (it != transformed_.end()) {
      Transformed& kernel = *it->second;
      EndedRun ended = EndTransformed(run, kernel);
      if (state != CUDA_SUCCESS) {
        // The kernel failed (its error is the context's): it is given up, never resumed.
        ended.result = state;
        ended.end.finished = true;
        ended.what = DescribeLaunch(*kernel.launch);
      }
      if (ended.end.finished || kernel.forgotten) {
        const bool forgotten = kernel.forgotten;
        Drop(it);
        if (!forgotten) result = std::move(ended);
      } else {
        result = std::move(ended);
      }
    }
  } else {
    if (state == CUDA_SUCCESS) Measure(run, nullptr);
    if (run.notify && !run.forgotten) {
      result = EndedRun{
          run.owner.client, {run.form, true, run.blocks_total, run.blocks_total}, state, {}};
      if (state == CUDA_SUCCESS) result->ended_at = EndedAt(run, polled);
    }
  }
  for (CUevent* event : {&run.start, &run.kernel_end, &run.raised, &run.reset, &run.done}) {
    ReleaseEvent(*event);
    *event = nullptr;
  }
  return result;
}

std::optional<scheduler::Time> KernelRuns::EndedAt(const DeviceRun& run, scheduler::Time polled) {
  float ms = 0;
  if (run.start == nullptr || api_.cuEventElapsedTime(&ms, run.start, run.done) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  // Its start event ran when the stream reached it: at its issue, or after the client's work
  // before it (the previous run's end, as far as it is known).
  scheduler::Time begin = run.issued;
  if (auto it = last_ended_at_.find(run.owner.client); it != last_ended_at_.end()) {
    begin = std::max(begin, it->second);
  }
  const auto took = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(std::max(ms, 0.0f)));
  const scheduler::Time end = std::min(begin + took, polled);
  last_ended_at_[run.owner.client] = end;
  return end;
}

EndedRun KernelRuns::EndTransformed(DeviceRun& run, Transformed& kernel) {
  kernel.in_flight = false;
  EndedRun ended{run.owner.client, {kernel.form.kind, false, 0, kernel.total}, CUDA_SUCCESS, {}};
  if (kernel.form.kind == FormKind::kSliced) {
    kernel.blocks_done += run.slice_blocks;
    ended.end.finished = kernel.form.sized_slice() ? kernel.blocks_done >= kernel.total
                                                   : kernel.next_slice == kernel.slices.size();
  } else {
    const uint32_t taken = std::min(kernel.slot.readback->next_task, kernel.total);
    kernel.blocks_done = taken;
    ended.end.finished = taken >= kernel.total;
    float ms = 0;
    if (run.raised != nullptr &&
        api_.cuEventElapsedTime(&ms, run.raised, run.kernel_end) == CUDA_SUCCESS) {
      // A kernel that ended before the flag landed gives a negative time: it needed no stop.
      if (ms > 0) {
        const auto latency = static_cast<uint64_t>(ms * 1e6);
        run.owner.stats->AddPreemptionLatency(latency);
        run.owner.latencies->preemption.Add(scheduler::Duration(latency));
      }
    }
    if (!ended.end.finished) {
      kernel.preempted = true;
      if (!kernel.raised) {
        // Workers stop early without the flag when the kernel faulted and its stream holds the
        // fault (a tenant's on the emulated GPU), which is the client's error; otherwise this
        // would be a bug of the PTB form.
        const CUresult stream_state = api_.cuStreamQuery(kernel.launch->stream);
        if (stream_state == CUDA_SUCCESS || stream_state == CUDA_ERROR_NOT_READY) {
          TALLY_LOG_ERROR("{}: the PTB form stopped after {} of {} blocks without being preempted",
                          DescribeLaunch(*kernel.launch), taken, kernel.total);
          ended.result = CUDA_ERROR_LAUNCH_FAILED;
        } else {
          ended.result = stream_state;
        }
        ended.end.finished = true;
      }
    }
    if (ended.end.finished && kernel.preempted) ++kernel.owner.stats->preempted;
  }
  ended.end.blocks_done = kernel.blocks_done;
  if (ended.result != CUDA_SUCCESS) ended.what = DescribeLaunch(*kernel.launch);
  Measure(run, &kernel);
  return ended;
}

void KernelRuns::Measure(const DeviceRun& run, Transformed* kernel) {
  if (profiler_ == nullptr || run.start == nullptr) return;
  float ms = 0;
  const CUevent end = run.kernel_end != nullptr ? run.kernel_end : run.done;
  if (api_.cuEventElapsedTime(&ms, run.start, end) != CUDA_SUCCESS) return;
  const auto time = std::chrono::duration_cast<scheduler::Duration>(
      std::chrono::duration<double, std::milli>(ms));
  if (kernel == nullptr) {
    if (run.measured) {
      profiler_->Record(*run.measured, run.name, {LaunchForm::Original(), time, time});
    }
    return;
  }
  Transformed& k = *kernel;
  if (!k.measure) return;
  if (k.form.kind == FormKind::kSliced) {
    k.time += time;
    k.turnaround = std::max(k.turnaround, time);
    if (k.next_slice == k.slices.size()) {
      profiler_->Record(k.info, k.launch->kernel->signature.name, {k.form, k.time, k.turnaround});
    }
    return;
  }
  if (k.preempted || k.blocks_done < k.total) return;  // a stopped run says nothing of the form
  profiler_->Record(k.info, k.launch->kernel->signature.name,
                    {k.form, time, profiler::PtbTurnaround(time, k.workers, k.total)});
}

}  // namespace tally::server
