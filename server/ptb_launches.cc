// The life of a PTB launch: Start (dispatch thread) -> Gate (the client's stream reached it) ->
// Execute (agent thread: runs, preempts and resumes the kernel on a slot's stream) -> the gate
// opens and the client's stream goes on.
#include "server/ptb_launches.h"

#include <atomic>
#include <random>
#include <thread>

#include "common/log.h"
#include "ptx_transform/launch_forms.h"
#include "ptx_transform/transform.h"
#include "server/kernel_launcher.h"

namespace tally::server {

// What the gate owns: a copy of the launch (the command that started it is gone by then).
struct PtbLaunches::Run {
  PtbLaunches* owner = nullptr;
  KernelLaunch launch;
  uint32_t workers = 0;
  uint32_t total = 0;
  bool preempt = false;
  std::mutex mutex;
  std::condition_variable done_changed;
  bool done = false;
};

PreemptPoint RandomPreemptPoints() {
  struct Random {
    std::mutex mutex;
    std::mt19937 rng{20260522};
  };
  return [random = std::make_shared<Random>()](uint32_t taken, uint32_t total) {
    std::uniform_int_distribution<uint32_t> point(taken, total - 1);
    std::lock_guard lock(random->mutex);
    return point(random->rng);
  };
}

PtbLaunches::PtbLaunches(const Backend& backend, Dispatcher& dispatcher,
                         PreemptPoint preempt_point)
    : api_(backend.api()),
      dispatcher_(dispatcher),
      preempt_point_(std::move(preempt_point)),
      agents_([&backend] {
        const absl::Status current = backend.MakeCurrent();
        if (!current.ok()) TALLY_LOG_ERROR("PTB agent thread: {}", current.ToString());
      }) {}

PtbLaunches::~PtbLaunches() {
  {
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return running_.empty(); });
  }
  for (const Slot& slot : free_slots_) {
    api_.cuStreamDestroy(slot.stream);
    api_.cuMemFreeHost(slot.host);
  }
}

CUresult PtbLaunches::Start(const KernelLaunch& launch, uint32_t workers, uint32_t total,
                            bool preempt) {
  auto run = std::make_unique<Run>();
  run->owner = this;
  run->launch = launch;
  run->workers = workers;
  run->total = total;
  run->preempt = preempt;
  {
    std::lock_guard lock(mutex_);
    ++running_[launch.client_id];
  }
  const CUresult gated = api_.cuLaunchHostFunc(launch.stream, &Gate, run.get());
  if (gated != CUDA_SUCCESS) {
    Finished(launch.client_id);
    return gated;
  }
  run.release();  // the gate's now
  return CUDA_SUCCESS;
}

void CUDA_CB PtbLaunches::Gate(void* pointer) {
  std::unique_ptr<Run> run(static_cast<Run*>(pointer));
  // The agent's last touch of `run` is under its mutex; after that only the gate uses it.
  run->owner->agents_.Run([run = run.get()] {
    PtbLaunches& owner = *run->owner;
    const CUresult result = owner.Execute(*run);
    if (result != CUDA_SUCCESS) {
      if (run->launch.queue != nullptr) {
        owner.dispatcher_.DeferError(*run->launch.queue, result, DescribeLaunch(run->launch));
      } else {
        TALLY_LOG_ERROR("{}: PTB launch failed with CUresult {}",
                        run->launch.kernel->signature.name, static_cast<int>(result));
      }
    }
    owner.Finished(run->launch.client_id);
    std::lock_guard lock(run->mutex);
    run->done = true;
    run->done_changed.notify_all();
  });
  std::unique_lock lock(run->mutex);
  run->done_changed.wait(lock, [&] { return run->done; });
}

void PtbLaunches::Finished(uint64_t client_id) {
  std::lock_guard lock(mutex_);
  auto it = running_.find(client_id);
  if (--it->second == 0) running_.erase(it);
  finished_.notify_all();
}

void PtbLaunches::WaitForClient(uint64_t client_id) {
  std::unique_lock lock(mutex_);
  finished_.wait(lock, [&] { return !running_.contains(client_id); });
}

CUresult PtbLaunches::AcquireSlot(Slot& slot) {
  {
    std::lock_guard lock(mutex_);
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
      return CUDA_SUCCESS;
    }
  }
  CUresult result =
      api_.cuMemHostAlloc(&slot.host, sizeof(ptx::PtbState), CU_MEMHOSTALLOC_DEVICEMAP);
  if (result != CUDA_SUCCESS) return result;
  result = api_.cuMemHostGetDevicePointer(&slot.device, slot.host, 0);
  // Non-blocking: the client's stream may be the legacy NULL stream, which its gate holds.
  if (result == CUDA_SUCCESS) {
    result = api_.cuStreamCreateWithPriority(&slot.stream, CU_STREAM_NON_BLOCKING, 0);
  }
  if (result != CUDA_SUCCESS) api_.cuMemFreeHost(slot.host);
  return result;
}

void PtbLaunches::ReleaseSlot(const Slot& slot) {
  std::lock_guard lock(mutex_);
  free_slots_.push_back(slot);
}

CUresult PtbLaunches::Execute(const Run& run) {
  const KernelLaunch& launch = run.launch;
  const KernelVariant& ptb = *launch.kernel->preemptible;
  Slot slot;
  CUresult result = AcquireSlot(slot);
  if (result != CUDA_SUCCESS) return result;
  auto params = ptx::PreemptibleParams(ptb.signature, ArgumentPointers(launch), slot.device,
                                       launch.grid);
  if (!params.ok()) {
    TALLY_LOG_ERROR("{}: {}", ptb.signature.name, params.status().ToString());
    ReleaseSlot(slot);
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* state = static_cast<ptx::PtbState*>(slot.host);
  std::atomic_ref<uint32_t> next_task(state->next_task);
  std::atomic_ref<uint32_t> preempt(state->preempt);
  next_task.store(0);
  int preemptions_left = run.preempt ? kMaxPreemptions : 0;
  for (bool stopped_early = false;; stopped_early = true) {
    const uint32_t taken = next_task.load();
    const uint32_t target = preemptions_left-- > 0 ? preempt_point_(taken, run.total) : run.total;
    bool raised = target <= taken;
    preempt.store(raised ? 1 : 0);
    result = LaunchVariant(api_, launch, ptb.function, {run.workers, 1, 1}, slot.stream, *params);
    if (result != CUDA_SUCCESS) break;
    if (!raised && target < run.total) {
      while (next_task.load() < target && api_.cuStreamQuery(slot.stream) == CUDA_ERROR_NOT_READY) {
        std::this_thread::yield();
      }
      preempt.store(1);
      raised = true;
    }
    if ((result = api_.cuStreamSynchronize(slot.stream)) != CUDA_SUCCESS) break;
    const uint32_t done = next_task.load();
    if (done >= run.total) {
      if (stopped_early) ++launch.stats->preempted;
      break;
    }
    if (!raised) {
      // Workers only stop early when the flag is up: this is a bug of the PTB form.
      TALLY_LOG_ERROR("{}: the PTB form stopped after {} of {} blocks without being preempted",
                      ptb.signature.name, done, run.total);
      result = CUDA_ERROR_LAUNCH_FAILED;
      break;
    }
    ++launch.stats->resumes;
  }
  ReleaseSlot(slot);
  return result;
}

}  // namespace tally::server
