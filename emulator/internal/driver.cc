// Driver initialisation/teardown, context registry and primary context reference counting.
#include "emulator/internal/driver.h"

#include <chrono>
#include <shared_mutex>

#include "common/log.h"
#include "common/status.h"

namespace tally::emu {
namespace {

std::atomic<DriverState> g_state{DriverState::kUninitialized};
std::shared_timed_mutex g_api_mu;
std::mutex g_init_mu;
Driver* g_driver = nullptr;  // owned; deleted at library teardown

}  // namespace

DriverState Driver::State() { return g_state.load(std::memory_order_acquire); }

std::shared_timed_mutex& Driver::ApiMutex() { return g_api_mu; }

Driver& Driver::Get() { return *g_driver; }

absl::Status Driver::Initialize(unsigned flags) {
  // cuInit: "Currently, the Flags parameter must be 0."
  if (flags != 0) return CudaError(CUDA_ERROR_INVALID_VALUE, "cuInit flags must be 0");
  std::lock_guard lock(g_init_mu);
  if (State() == DriverState::kShutDown) {
    return CudaError(CUDA_ERROR_DEINITIALIZED, "driver shut down");
  }
  if (State() == DriverState::kReady) return absl::OkStatus();
  DeviceConfig config = DeviceConfig::FromEnvironment();
  TALLY_ASSIGN_OR_RETURN(auto memory, DeviceMemory::Create(config.memory_bytes));
  g_driver = new Driver(std::move(config), std::move(memory));
  TALLY_LOG_DEBUG("emu: initialised '{}' (sm_{}{}, {} SMs, {} MiB)", g_driver->config_.name,
                  g_driver->config_.cc_major, g_driver->config_.cc_minor,
                  g_driver->config_.sm_count, g_driver->config_.memory_bytes >> 20);
  g_state.store(DriverState::kReady, std::memory_order_release);
  return absl::OkStatus();
}

void Driver::Shutdown() {
  std::lock_guard lock(g_init_mu);
  DriverState previous = g_state.exchange(DriverState::kShutDown);
  if (previous != DriverState::kReady) return;
  // Stop every context's workers before the memory they might touch goes away; kernels still
  // running are cancelled so that one that never ends cannot hang the process at exit.
  if (g_driver->sm_pool_ != nullptr) g_driver->sm_pool_->Cancel();
  // Entry points already inside the driver (other threads of an exiting process) finish
  // first; later ones see kShutDown. If one does not finish (e.g. it waits for a host callback
  // that never returns), the driver is left in place rather than freed under it.
  std::unique_lock api(g_api_mu, std::defer_lock);
  if (!api.try_lock_for(std::chrono::seconds(2))) {
    TALLY_LOG_WARN("emu: entry points still running at teardown; not freeing the driver");
    return;
  }
  for (auto& context : g_driver->contexts_.RemoveIf([](const Context&) { return true; })) {
    context->Deactivate();
  }
  delete g_driver;
  g_driver = nullptr;
}

Driver::Driver(DeviceConfig config, std::unique_ptr<DeviceMemory> memory)
    : config_(std::move(config)),
      memory_(std::move(memory)),
      virtual_memory_(std::make_unique<VirtualMemory>(*memory_)) {
  primary_ = std::make_shared<Context>(next_context_id_++, 0);
  primary_handle_ = contexts_.Insert(primary_);
  primary_->set_handle(primary_handle_);
}

exec::SmPool& Driver::sm_pool() {
  // By default one host thread per core (the pool caps it at one per SM).
  std::call_once(sm_pool_once_, [&] {
    const uint32_t threads = config_.host_threads > 0
                                 ? static_cast<uint32_t>(config_.host_threads)
                                 : std::max(1u, std::thread::hardware_concurrency());
    sm_pool_ = std::make_unique<exec::SmPool>(static_cast<uint32_t>(config_.sm_count), threads);
  });
  return *sm_pool_;
}

void Driver::SynchronizeDevice() {
  for (const std::shared_ptr<Context>& context : contexts_.All()) {
    if (context->active()) context->Synchronize();
  }
}

absl::Status Driver::CheckDevice(CUdevice device) const {
  if (device < 0 || device >= config_.device_count) {
    return CudaError(CUDA_ERROR_INVALID_DEVICE, "no such device ordinal");
  }
  return absl::OkStatus();
}

std::vector<CUcontext>& Driver::ContextStack() {
  thread_local std::vector<CUcontext> stack;
  return stack;
}

absl::StatusOr<std::shared_ptr<Kernel>> Driver::UsableKernel(CUfunction handle) {
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Kernel> kernel, kernels_.Lookup(handle));
  if (!kernel->function->unusable.ok()) return kernel->function->unusable;
  return kernel;
}

absl::StatusOr<std::shared_ptr<Context>> Driver::LookupContext(CUcontext handle) {
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Context> context, contexts_.Lookup(handle));
  if (!context->active()) return CudaError(CUDA_ERROR_INVALID_CONTEXT, "context is inactive");
  return context;
}

absl::StatusOr<std::shared_ptr<Context>> Driver::CurrentContext() {
  const auto& stack = ContextStack();
  if (stack.empty()) return CudaError(CUDA_ERROR_INVALID_CONTEXT, "no current context");
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Context> context, LookupContext(stack.back()));
  if (CUresult sticky = context->sticky_error(); sticky != CUDA_SUCCESS) {
    return CudaError(sticky, "context has a sticky error from earlier asynchronous work");
  }
  return context;
}

absl::Status Driver::CurrentContextSticky() {
  const auto& stack = ContextStack();
  if (stack.empty()) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<Context>> context = LookupContext(stack.back());
  if (!context.ok()) return absl::OkStatus();
  if (CUresult sticky = (*context)->sticky_error(); sticky != CUDA_SUCCESS) {
    return CudaError(sticky, "context has a sticky error from earlier asynchronous work");
  }
  return absl::OkStatus();
}

bool Driver::IsNullStream(CUstream handle) {
  return handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD;
}

absl::StatusOr<Driver::BoundStream> Driver::ResolveStream(CUstream handle) {
  if (IsNullStream(handle)) {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Context> context, CurrentContext());
    std::shared_ptr<Stream> stream = context->null_stream();
    return BoundStream{std::move(context), std::move(stream)};
  }
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Stream> stream, streams_.Lookup(handle));
  std::shared_ptr<Context> context = stream->owner().lock();
  if (context == nullptr || !context->active()) {
    return CudaError(CUDA_ERROR_INVALID_HANDLE, "the stream's context was destroyed");
  }
  if (CUresult sticky = context->sticky_error(); sticky != CUDA_SUCCESS) {
    return CudaError(sticky, "context has a sticky error from earlier asynchronous work");
  }
  if (CUresult fault = tenant_faults_.Error(stream->tenant()); fault != CUDA_SUCCESS) {
    return CudaError(fault, "the stream's tenant has a sticky error from earlier asynchronous work");
  }
  return BoundStream{std::move(context), std::move(stream)};
}

absl::StatusOr<CUcontext> Driver::CreateContext(unsigned flags) {
  auto context = std::make_shared<Context>(next_context_id_++, flags);
  context->Activate();
  CUcontext handle = contexts_.Insert(context);
  context->set_handle(handle);
  ContextStack().push_back(handle);  // cuCtxCreate makes the new context current
  return handle;
}

absl::Status Driver::DestroyContext(CUcontext handle) {
  if (handle == primary_handle_) {
    return CudaError(CUDA_ERROR_INVALID_CONTEXT, "the primary context cannot be destroyed");
  }
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<Context> context, contexts_.Remove(handle));
  ReleaseContextResources(*context);
  // "If the context is current to the calling thread then it is also popped."
  auto& stack = ContextStack();
  if (!stack.empty() && stack.back() == handle) stack.pop_back();
  return absl::OkStatus();
}

void Driver::ReleaseContextResources(Context& context) {
  context.Synchronize();
  uint64_t id = context.id();
  streams_.RemoveIf([id](const Stream& stream) { return stream.context_id() == id; });
  events_.RemoveIf([id](const Event& event) { return event.context_id == id; });
  kernels_.RemoveIf([id](const Kernel& kernel) { return kernel.module->context_id() == id; });
  modules_.RemoveIf([id](const ModuleEntry& entry) { return entry.module->context_id() == id; });
  textures_.RemoveIf([id](const TextureObject& object) { return object.owner == id; });
  arrays_.RemoveIf([id](const CudaArray& array) { return array.owner == id; });
  context.Deactivate();
  memory_->ReleaseAllOwnedBy(id);
}

CUcontext Driver::PrimaryRetain() {
  std::lock_guard lock(primary_mu_);
  if (primary_retain_count_++ == 0) primary_->Activate();
  return primary_handle_;
}

absl::Status Driver::PrimaryRelease() {
  std::lock_guard lock(primary_mu_);
  if (primary_retain_count_ == 0) {
    return CudaError(CUDA_ERROR_INVALID_CONTEXT, "primary context is not retained");
  }
  if (--primary_retain_count_ == 0) ReleaseContextResources(*primary_);
  return absl::OkStatus();
}

void Driver::PrimaryReset() {
  std::lock_guard lock(primary_mu_);
  // "Destroy all allocations and reset all state on the primary context"; the retain count is
  // kept, and a retained context becomes usable again right away.
  ReleaseContextResources(*primary_);
  if (primary_retain_count_ > 0) primary_->Activate();
}

}  // namespace tally::emu
