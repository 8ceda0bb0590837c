// The forms of a kernel launch. The original arguments are the client's parameter buffer; the
// variants' buffers are packed by ptx_transform/launch_forms.h. PTB launches only start here:
// ptb_launches.h runs them (and, in validation, preempts and resumes them) in stream order
// without holding the dispatch thread; the priority scheduler will raise the flag when
// high-priority work arrives instead of at chosen moments.
#include "server/kernel_launcher.h"

#include "absl/strings/str_format.h"
#include "common/log.h"

namespace tally::server {

std::vector<const void*> ArgumentPointers(const KernelLaunch& launch) {
  std::vector<const void*> args;
  for (const ptx::ParamLayout& param : launch.kernel->signature.params) {
    args.push_back(launch.params.data() + param.offset);
  }
  return args;
}

CUresult LaunchVariant(const DriverApi& api, const KernelLaunch& launch, CUfunction function,
                       ptx::Dim3 grid, CUstream stream, std::vector<uint8_t>& params) {
  size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return api.cuLaunchKernel(function, grid.x, grid.y, grid.z, launch.block.x, launch.block.y,
                            launch.block.z, launch.shared_bytes, stream, nullptr, extra);
}

std::string LaunchStats::Format() const {
  return absl::StrFormat(
      "%d original, %d sliced (%d slices), %d preemptible (%d preempted, %d resumes)",
      original.load(), sliced.load(), slices.load(), preemptible.load(), preempted.load(),
      resumes.load());
}

KernelLauncher::KernelLauncher(const Backend& backend, Dispatcher& dispatcher,
                               PreemptPoint preempt_point)
    : api_(backend.api()),
      dispatcher_(dispatcher),
      ptb_(backend, dispatcher, std::move(preempt_point)) {
  int sms = 0;
  if (api_.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, backend.device()) ==
          CUDA_SUCCESS &&
      sms > 0) {
    sm_count_ = static_cast<uint32_t>(sms);
  }
}

std::string DescribeLaunch(const KernelLaunch& launch) {
  return absl::StrFormat("kernel %s<<<(%d,%d,%d), (%d,%d,%d), %d>>>",
                         launch.kernel->signature.name, launch.grid.x, launch.grid.y,
                         launch.grid.z, launch.block.x, launch.block.y, launch.block.z,
                         launch.shared_bytes);
}

CUresult KernelLauncher::Launch(const KernelLaunch& launch) {
  const CUresult result = Issue(launch);
  if (result != CUDA_SUCCESS && launch.queue != nullptr) {
    dispatcher_.DeferError(*launch.queue, result, DescribeLaunch(launch));
  }
  return result;
}

CUresult KernelLauncher::Issue(const KernelLaunch& launch) {
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
    const CUresult issued =
        LaunchVariant(api_, launch, sliced.function, {slice.blocks, 1, 1}, launch.stream, *params);
    if (issued != CUDA_SUCCESS) return issued;
    ++launch.stats->slices;
  }
  return CUDA_SUCCESS;
}

CUresult KernelLauncher::LaunchPreemptible(const KernelLaunch& launch,
                                           const scheduler::LaunchForm& form, uint32_t total) {
  const KernelVariant& ptb = *launch.kernel->preemptible;
  const uint32_t block_threads = launch.block.x * launch.block.y * launch.block.z;
  int per_sm = 0;
  const CUresult result = api_.cuOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, ptb.function, static_cast<int>(block_threads), launch.shared_bytes);
  if (result != CUDA_SUCCESS) return result;
  const uint32_t workers =
      ptx::PtbWorkerCount(static_cast<uint32_t>(per_sm), sm_count_, total, form.workers);
  ++launch.stats->preemptible;
  return ptb_.Start(launch, workers, total, form.preempt);
}

}  // namespace tally::server
