// The forms of a kernel launch. The original arguments are the client's parameter buffer; the
// variants' buffers are packed by ptx_transform/launch_forms.h. PTB launches are synchronous
// for the dispatch thread for now: the host agent resets the shared state, raises the flag and
// relaunches, which validation needs; the priority scheduler will raise the flag when
// high-priority work arrives instead of at random.
#include "server/kernel_launcher.h"

#include <thread>

#include "absl/strings/str_format.h"
#include "common/log.h"

namespace tally::server {
namespace {

// Preemptions per PTB launch in validation: after these the kernel runs to its end, so every
// launch finishes whatever the timing.
constexpr int kMaxPreemptions = 3;

// The original arguments as one pointer per parameter, into the client's buffer.
std::vector<const void*> ArgumentPointers(const KernelLaunch& launch) {
  std::vector<const void*> args;
  for (const ptx::ParamLayout& param : launch.kernel->signature.params) {
    args.push_back(launch.params.data() + param.offset);
  }
  return args;
}

}  // namespace

std::string LaunchStats::Format() const {
  return absl::StrFormat(
      "%d original, %d sliced (%d slices), %d preemptible (%d preempted, %d resumes)",
      original.load(), sliced.load(), slices.load(), preemptible.load(), preempted.load(),
      resumes.load());
}

KernelLauncher::KernelLauncher(const Backend& backend, Dispatcher& dispatcher)
    : api_(backend.api()), dispatcher_(dispatcher) {
  int sms = 0;
  if (api_.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, backend.device()) ==
          CUDA_SUCCESS &&
      sms > 0) {
    sm_count_ = static_cast<uint32_t>(sms);
  }
}

KernelLauncher::~KernelLauncher() {
  if (ptb_state_ != nullptr) api_.cuMemFreeHost(ptb_state_);
}

CUresult KernelLauncher::Launch(const KernelLaunch& launch) {
  const Kernel& kernel = *launch.kernel;
  if (launch.cooperative) return LaunchOriginal(launch);
  scheduler::LaunchForm form =
      dispatcher_.ChooseForm({.client_id = launch.client_id,
                              .priority = launch.priority,
                              .sliceable = kernel.sliced.has_value(),
                              .preemptible = kernel.preemptible.has_value()});
  if (form.kind == scheduler::FormKind::kOriginal) return LaunchOriginal(launch);
  auto total = ptx::LinearBlockCount(launch.grid);
  if (!total.ok()) {
    TALLY_LOG_DEBUG("{}: {}; launched in its original form", kernel.signature.name,
                    total.status().ToString());
    return LaunchOriginal(launch);
  }
  if (form.kind == scheduler::FormKind::kSliced) return LaunchSliced(launch, form.slices, *total);
  return LaunchPreemptible(launch, form, *total);
}

CUresult KernelLauncher::LaunchOriginal(const KernelLaunch& launch) {
  const ptx::KernelSignature& signature = launch.kernel->signature;
  std::vector<void*> params;
  params.reserve(signature.params.size());
  // cuLaunchKernel copies the arguments, so the buffer may go once it returns.
  auto* buffer = const_cast<std::byte*>(launch.params.data());
  for (const ptx::ParamLayout& param : signature.params) params.push_back(buffer + param.offset);
  ++launch.stats->original;
  if (launch.cooperative) {
    return api_.cuLaunchCooperativeKernel(launch.kernel->function, launch.grid.x, launch.grid.y,
                                          launch.grid.z, launch.block.x, launch.block.y,
                                          launch.block.z, launch.shared_bytes, launch.stream,
                                          params.data());
  }
  return api_.cuLaunchKernel(launch.kernel->function, launch.grid.x, launch.grid.y, launch.grid.z,
                             launch.block.x, launch.block.y, launch.block.z, launch.shared_bytes,
                             launch.stream, params.data(), nullptr);
}

CUresult KernelLauncher::Issue(const KernelLaunch& launch, CUfunction function, ptx::Dim3 grid,
                               std::vector<uint8_t>& params) {
  size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return api_.cuLaunchKernel(function, grid.x, grid.y, grid.z, launch.block.x, launch.block.y,
                             launch.block.z, launch.shared_bytes, launch.stream, nullptr, extra);
}

CUresult KernelLauncher::LaunchSliced(const KernelLaunch& launch, uint32_t slices, uint32_t total) {
  const KernelVariant& sliced = *launch.kernel->sliced;
  const uint32_t per_slice = total / slices + (total % slices != 0 ? 1 : 0);
  auto plan = ptx::PlanSlices(launch.grid, per_slice);
  const std::vector<const void*> args = ArgumentPointers(launch);
  if (!plan.ok()) {
    TALLY_LOG_ERROR("{}: {}", sliced.signature.name, plan.status().ToString());
    return CUDA_ERROR_INVALID_VALUE;
  }
  ++launch.stats->sliced;
  for (const ptx::Slice& slice : *plan) {
    auto params = ptx::SlicedParams(sliced.signature, args, slice, launch.grid);
    if (!params.ok()) {
      TALLY_LOG_ERROR("{}: {}", sliced.signature.name, params.status().ToString());
      return CUDA_ERROR_INVALID_VALUE;
    }
    const CUresult issued = Issue(launch, sliced.function, {slice.blocks, 1, 1}, *params);
    if (issued != CUDA_SUCCESS) return issued;
    ++launch.stats->slices;
  }
  return CUDA_SUCCESS;
}

CUresult KernelLauncher::EnsurePtbState() {
  if (ptb_state_ != nullptr) return CUDA_SUCCESS;
  void* host = nullptr;
  CUresult result = api_.cuMemHostAlloc(&host, sizeof(ptx::PtbState), CU_MEMHOSTALLOC_DEVICEMAP);
  if (result != CUDA_SUCCESS) return result;
  result = api_.cuMemHostGetDevicePointer(&ptb_state_device_, host, 0);
  if (result != CUDA_SUCCESS) {
    api_.cuMemFreeHost(host);
    return result;
  }
  ptb_state_ = static_cast<ptx::PtbState*>(host);
  return CUDA_SUCCESS;
}

CUresult KernelLauncher::LaunchPreemptible(const KernelLaunch& launch,
                                           const scheduler::LaunchForm& form, uint32_t total) {
  const KernelVariant& ptb = *launch.kernel->preemptible;
  const uint32_t block_threads = launch.block.x * launch.block.y * launch.block.z;
  int per_sm = 0;
  CUresult result = api_.cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, ptb.function, static_cast<int>(block_threads), launch.shared_bytes);
  if (result != CUDA_SUCCESS) return result;
  const uint32_t workers =
      ptx::PtbWorkerCount(static_cast<uint32_t>(per_sm), sm_count_, total, form.workers);
  if ((result = EnsurePtbState()) != CUDA_SUCCESS) return result;
  auto params = ptx::PreemptibleParams(ptb.signature, ArgumentPointers(launch), ptb_state_device_,
                                       launch.grid);
  if (!params.ok()) {
    TALLY_LOG_ERROR("{}: {}", ptb.signature.name, params.status().ToString());
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Earlier work on the stream first, so that the random moments fall in this kernel's run.
  // (The state is free: every PTB launch before this one has finished.)
  if ((result = api_.cuStreamSynchronize(launch.stream)) != CUDA_SUCCESS) return result;
  std::atomic_ref<uint32_t> next_task(ptb_state_->next_task);
  std::atomic_ref<uint32_t> preempt(ptb_state_->preempt);
  next_task.store(0);
  ++launch.stats->preemptible;
  int preemptions_left = form.preempt ? kMaxPreemptions : 0;
  for (bool stopped_early = false;; stopped_early = true) {
    preempt.store(0);
    if ((result = Issue(launch, ptb.function, {workers, 1, 1}, *params)) != CUDA_SUCCESS) {
      return result;
    }
    const bool raised = preemptions_left-- > 0;
    if (raised) {
      // A random point: once the workers have taken a random number of the remaining tasks
      // (none, too), or never if the kernel ends first.
      std::uniform_int_distribution<uint32_t> point(next_task.load(), total - 1);
      const uint32_t target = point(preempt_rng_);
      while (next_task.load() < target &&
             api_.cuStreamQuery(launch.stream) == CUDA_ERROR_NOT_READY) {
        std::this_thread::yield();
      }
      preempt.store(1);
    }
    if ((result = api_.cuStreamSynchronize(launch.stream)) != CUDA_SUCCESS) return result;
    const uint32_t done = next_task.load();
    if (done >= total) {
      if (stopped_early) ++launch.stats->preempted;
      return CUDA_SUCCESS;
    }
    if (!raised) {
      // Workers only stop early when the flag is up: this is a bug of the PTB form.
      TALLY_LOG_ERROR("{}: the PTB form stopped after {} of {} blocks without being preempted",
                      ptb.signature.name, done, total);
      return CUDA_ERROR_LAUNCH_FAILED;
    }
    ++launch.stats->resumes;
  }
}

}  // namespace tally::server
