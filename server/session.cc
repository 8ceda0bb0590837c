// Session set-up and the cleanup that runs when a client disconnects or dies.
#include "server/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "cuda_abi/device_output_ring.h"
#include "common/log.h"
#include "common/status.h"
#include "server/bounded_wait.h"
#include "server/cuda_result.h"
#include "server/session_registry.h"
#include "server/stream_priority.h"

namespace tally::server {

StreamEntry::~StreamEntry() {
  // cudaStreamDestroy returns at once and the work still completes (CUDA Runtime API); the
  // marker may still be waited on by issued cross-stream ordering, so it goes with the stream.
  if (stream != nullptr) api->cuStreamDestroy(stream);
  if (marker != nullptr) api->cuEventDestroy(marker);
}

namespace {

// The server's limits, lowered where the client's grant sets lower ones (its device-memory
// limit is in ClientInfo::memory_limit, which memory_limit_ takes).
SessionLimits WithinCeiling(SessionLimits limits, const ipc::ClientInfo& client) {
  limits.pinned_limit = std::min(limits.pinned_limit, client.pinned_limit);
  return limits;
}

}  // namespace

Session::Session(ServerContext& server, const ipc::ClientInfo& client, ipc::BulkArea bulk,
                 std::span<std::byte> host_region, uint64_t context_generation,
                 const SessionLimits& limits)
    : server_(server),
      client_(client),
      client_limits_(WithinCeiling(limits, client)),
      vendor_libraries_(server.vendor != nullptr ? server.vendor->For(client.priority) : 0),
      context_generation_(context_generation),
      bulk_(bulk),
      host_region_(host_region),
      memory_limit_(client.memory_limit != 0 ? std::min(client.memory_limit, limits.memory_limit)
                                             : limits.memory_limit),
      queue_(server.dispatcher.AddClient(client.client_id, client.priority,
                                         limits.max_queued_commands)),
      waiters_(std::make_unique<WaiterPool>([&backend = server.backend] {
        const absl::Status current = backend.MakeCurrent();
        if (!current.ok()) TALLY_LOG_ERROR("waiter thread: {}", current.ToString());
      })),
      host_callbacks_(std::make_shared<HostCallbacks>(server.backend.api())) {
  server.dispatcher.SetBudget(*queue_, client.slowdown_budget.value_or(server.slowdown_budget));
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(ServerContext& server,
                                                         const ipc::ClientInfo& client,
                                                         ipc::BulkArea bulk,
                                                         std::span<std::byte> host_region,
                                                         uint64_t context_generation,
                                                         std::optional<SessionLimits> limits) {
  std::unique_ptr<Session> session(new Session(server, client, bulk, host_region,
                                               context_generation, limits.value_or(server.limits)));
  TALLY_ASSIGN_OR_RETURN(session->default_stream_,
                         session->MakeStream(/*blocking=*/true, StreamPriority()));
  if (server.isolation != Isolation::kNone) {
    Session* const owner = session.get();
    TALLY_ASSIGN_OR_RETURN(
        session->fence_,
        ClientFence::Create(server.backend.api(), server.backend.device(),
                            server.device_info.total_memory, host_region,
                            [owner](CUdeviceptr base) { return owner->ClaimMemory(base); }));
  }
  if (server.sessions != nullptr) server.sessions->Add(session.get());
  return session;
}

namespace {

// Waits until `stream` has no work left, or until `deadline` (false then). Polled, because a
// blocking cuStreamSynchronize cannot be abandoned.
bool WaitStreamIdle(const DriverApi& api, CUstream stream,
                    std::chrono::steady_clock::time_point deadline) {
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    api.cuStreamSynchronize(stream);
    return true;
  }
  auto pause = std::chrono::microseconds(50);
  while (api.cuStreamQuery(stream) == CUDA_ERROR_NOT_READY) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  return true;  // done, or failed: either way nothing of it runs any more
}

}  // namespace

Session::~Session() {
  if (!closed_) Close(std::chrono::steady_clock::time_point::max());
}

bool Session::Close(std::chrono::steady_clock::time_point deadline) {
  closed_ = true;
  // Host functions stop waiting for the client, waits blocked on the client's queue end once it
  // is discarded, waits on the device end when the work issued so far completes. Only then is
  // anything freed.
  host_callbacks_->Close();
  batch_.clear();
  // Nothing more of the client's is worth running: on the emulated GPU its launches stop where
  // they are and those not started never run, so that its streams drain in milliseconds. (On
  // NVIDIA's driver nothing can stop a running kernel; the device window keeps what remains
  // small.)
  if (const PFN_tallyEmuStreamCancel cancel = server_.backend.extensions().stream_cancel) {
    for (const StreamRef& stream : HoldAllStreams()) cancel(stream->stream);
  }
  // Also stops the client's running PTB kernel and waits for its kernel runs to end.
  bool finished = server_.dispatcher.RemoveClient(*queue_, deadline);
  finished = finished && waiters_->Shutdown(deadline);
  // A fence violation the client left before asking about is logged all the same.
  if (fence_ != nullptr) StickyError();
  const DriverApi& api = this->api();
  const uint64_t bytes = allocations_.total_bytes();
  OwnedResources owned = TakeOwned();
  fence_.reset();  // `owned` frees it with the rest
  const size_t streams = owned.streams.size();
  const size_t events = owned.events.size();
  const size_t allocations = owned.allocations.size();
  const size_t host_blocks = owned.host_blocks.size();
  for (const StreamRef& entry : owned.streams) {
    finished = finished && WaitStreamIdle(api, entry->stream, deadline);
  }
  if (default_stream_ != nullptr) {
    finished = finished && WaitStreamIdle(api, default_stream_->stream, deadline);
  }
  if (!finished) {
    // Freeing memory that a kernel still uses would hand it to the next client while that kernel
    // writes into it: the client's resources stay allocated until the server restarts.
    TALLY_LOG_ERROR(
        "client {} (pid {}): its work still runs on the device after the teardown timeout; "
        "abandoned {} allocation(s) of {} bytes, {} page-locked block(s), {} stream(s), {} "
        "event(s) and its modules",
        client_.client_id, client_.pid, allocations, bytes, host_blocks, streams, events);
    // Its streams and events go (the work on them still completes); the memory stays.
    owned.allocations.clear();
    owned.host_blocks.clear();
    device_output_->AbandonRing();
    if (server_.sessions != nullptr) server_.sessions->Remove(this);
    return false;
  }
  // Its kernels have finished: what they printed and the client did not take goes too.
  device_output().Discard();
  // The streams are idle, so nothing uses the host region any more: the server's mapping of it
  // goes with the connection, after this. Freeing may still wait for other clients' kernels.
  const bool released = RunBounded(
      [this, &api, owned = std::make_shared<OwnedResources>(std::move(owned))] {
        if (const absl::Status current = server_.backend.MakeCurrent(); !current.ok()) {
          TALLY_LOG_ERROR("client {} teardown: {}", client_.client_id, current.ToString());
        }
        default_stream_.reset();
        owned->Release(api);
        device_output_->ReleaseRing();
        functions_.Clear([](FunctionEntry&) {});
        modules_.Clear([](std::shared_ptr<SharedModule>&) {});
        if (server_.unfenced_gate != nullptr) server_.unfenced_gate->ClientLeft(client_.client_id);
      },
      deadline);
  if (!released) {
    TALLY_LOG_ERROR(
        "client {} (pid {}): freeing its resources waits for work of other clients past the "
        "teardown timeout; it goes on in the background",
        client_.client_id, client_.pid);
    if (server_.sessions != nullptr) server_.sessions->Remove(this);
    return false;
  }
  // Before the line that says the client is gone, which scripts wait for.
  if (const SchedulingStats& stats = server_.dispatcher.stats(*queue_); stats.kernels() > 0) {
    TALLY_LOG_INFO("client {} kernel launches: {}", client_.client_id, stats.Format());
  }
  TALLY_LOG_INFO(
      "client {} (pid {}) gone: freed {} allocation(s) of {} bytes, {} page-locked block(s), {} "
      "stream(s), {} event(s)",
      client_.client_id, client_.pid, allocations, bytes, host_blocks, streams, events);
  // Listed until everything is freed, so that tally-ctl never shows memory as free too early.
  if (server_.sessions != nullptr) server_.sessions->Remove(this);
  return true;
}

void OwnedResources::Release(const DriverApi& api) {
  streams.clear();  // destroyed here unless a waiter still holds one
  events.clear();
  if (fence == nullptr) {
    for (const uint64_t base : allocations) api.cuMemFree(base);
  } else if (fence.use_count() > 1) {  // the client stays (cudaDeviceReset), so does its fence
    for (const uint64_t base : allocations) fence->partition().Free(base).IgnoreError();
  }
  fence.reset();  // the last holder's partition goes at once, all of it
  for (const uint64_t base : host_blocks) api.cuMemHostUnregister(reinterpret_cast<void*>(base));
  allocations.clear();
  host_blocks.clear();
}

OwnedResources Session::TakeOwned() {
  work_stream_ = nullptr;
  OwnedResources owned;
  streams_.Clear([&](StreamRef& entry) { owned.streams.push_back(std::move(entry)); });
  events_.Clear([&](EventRef& entry) { owned.events.push_back(std::move(entry)); });
  owned.allocations = allocations_.TakeAll();
  owned.fence = fence_;
  mem_pools_.Reset();
  owned.host_blocks = host_blocks_.TakeAll();
  return owned;
}

// Enough to amortise the hand-over, few enough that the device starts early.
constexpr size_t kMaxBatch = 128;

void Session::Enqueue(CUstream stream, Command command) {
  Batch({std::move(command), nullptr, nullptr, stream});
}

void Session::EnqueueKernel(KernelLaunch launch) {
  const CUstream stream = launch.stream;
  Batch({{}, std::make_unique<KernelLaunch>(std::move(launch)), nullptr, stream});
}

void Session::EnqueueHostFunction(HostFunction function) {
  const CUstream stream = function.stream;
  Batch({{}, nullptr, std::make_unique<HostFunction>(std::move(function)), stream});
}

void Session::Batch(QueuedCommand command) {
  batch_.push_back(std::move(command));
  ++enqueued_;
  if (work_stream_ != nullptr) work_stream_->last_work = enqueued_;
  if (batch_.size() >= kMaxBatch) HandOver();
}

void Session::HandOver() {
  if (batch_.empty()) return;
  Dispatcher& dispatcher = server_.dispatcher;
  const size_t bound = client_limits_.max_queued_commands;
  while (!dispatcher.HasRoom(*queue_)) {
    // The stream of a host function waits for the client's answer, which the client posts
    // behind the requests we would stop reading: waiting here could wait for ourselves.
    if (host_callbacks_->Waiting() && overflow_ < 3 * bound) {
      overflow_ += batch_.size();
      break;
    }
    if (client_alive_ && !client_alive_()) {
      batch_.clear();  // its work would be discarded anyway
      return;
    }
    // Short waits: the client's death and the host function's arrival are noticed in time.
    dispatcher.WaitForRoom(*queue_, std::chrono::steady_clock::now() +
                                        std::chrono::milliseconds(10));
  }
  if (!host_callbacks_->Waiting()) overflow_ = 0;
  dispatcher.Enqueue(*queue_, batch_);
}

absl::StatusOr<StreamRef> Session::MakeStream(bool blocking, StreamPriority priority) {
  auto entry = std::make_shared<StreamEntry>(api(), blocking);
  const ipc::GetDeviceInfoResponse& device = server_.device_info;
  const StreamPriority backend_priority =
      BackendStreamPriority(priority, server_.dispatcher.priority(*queue_),
                            device.stream_priority_least, device.stream_priority_greatest);
  // Every backend stream is non-blocking: the backend's legacy NULL stream would serialise this
  // client with all others in the shared context. The client's own legacy ordering is added by
  // StreamForWork.
  TALLY_RETURN_IF_ERROR(
      CheckCu(api().cuStreamCreateWithPriority(&entry->stream, CU_STREAM_NON_BLOCKING,
                                               backend_priority.value()),
              "cuStreamCreateWithPriority"));
  // On the emulated GPU the stream's kernels touch only the client's memory, and their faults
  // are the client's alone.
  if (const auto set_tenant = server_.backend.extensions().stream_set_tenant) {
    TALLY_RETURN_IF_ERROR(CheckCu(set_tenant(entry->stream, tenant()), "tallyEmuStreamSetTenant"));
  }
  TALLY_RETURN_IF_ERROR(
      CheckCu(api().cuEventCreate(&entry->marker, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  return entry;
}

absl::StatusOr<uint64_t> Session::CreateStream(bool blocking, StreamPriority priority) {
  TALLY_RETURN_IF_ERROR(
      CheckCount(streams_.size(), client_limits_.max_streams, "stream", "--max-streams"));
  TALLY_ASSIGN_OR_RETURN(StreamRef entry, MakeStream(blocking, priority));
  return streams_.Insert(std::move(entry));
}

absl::Status Session::CheckCount(size_t held, size_t limit, std::string_view what,
                                 std::string_view flag) const {
  if (held < limit) return absl::OkStatus();
  // CUDA reports running out of streams, events or module slots as running out of memory.
  TALLY_LOG_WARN("client {} (pid {}) holds {} {}s, its limit (tally-server {})",
                 client_.client_id, client_.pid, held, what, flag);
  return ClientError(CUDA_ERROR_OUT_OF_MEMORY,
                     fmt::format("this client holds {} {}s, the most the Tally server allows "
                                 "(tally-server {})",
                                 held, what, flag));
}

absl::Status Session::DestroyStream(uint64_t handle) {
  Flush();
  work_stream_ = nullptr;
  // Destroyed here unless a waiter still holds it.
  return streams_.Remove(handle).status();
}

absl::StatusOr<StreamRef*> Session::FindEntry(uint64_t handle) {
  if (handle == 0) return &default_stream_;
  return streams_.Find(handle);
}

absl::StatusOr<CUstream> Session::FindStream(uint64_t handle) {
  TALLY_ASSIGN_OR_RETURN(StreamRef * entry, FindEntry(handle));
  return (*entry)->stream;
}

absl::StatusOr<StreamRef> Session::HoldStream(uint64_t handle) {
  TALLY_ASSIGN_OR_RETURN(StreamRef * entry, FindEntry(handle));
  return *entry;
}

absl::StatusOr<CUstream> Session::StreamForWork(uint64_t handle) {
  TALLY_ASSIGN_OR_RETURN(StreamEntry * entry, EntryForWork(handle));
  return entry->stream;
}

absl::StatusOr<StreamEntry*> Session::EntryForWork(uint64_t handle) {
  TALLY_ASSIGN_OR_RETURN(StreamRef * found, FindEntry(handle));
  StreamEntry& entry = **found;
  work_stream_ = found->get();
  if (!entry.blocking) return &entry;
  const DriverApi* api = &this->api();
  const CUstream after = entry.stream;
  // cuStreamWaitEvent waits for the event's most recent record at the time of the call (CUDA
  // Driver API), so one marker per stream serves every ordering point. Issued before the
  // stream can be destroyed (DestroyStream flushes first), so raw handles suffice here.
  const auto wait_for = [&](const StreamEntry& before) {
    Enqueue(after, [api, marker = before.marker, stream = before.stream, after] {
      const CUresult recorded = api->cuEventRecord(marker, stream);
      return recorded != CUDA_SUCCESS ? recorded : api->cuStreamWaitEvent(after, marker, 0);
    });
  };
  if (handle == 0) {
    streams_.ForEach([&](const StreamRef& other) {
      if (other->blocking) wait_for(*other);
    });
  } else {
    wait_for(*default_stream_);
  }
  return &entry;
}

std::vector<StreamRef> Session::HoldAllStreams() {
  std::vector<StreamRef> all{default_stream_};
  streams_.ForEach([&](const StreamRef& entry) { all.push_back(entry); });
  return all;
}

absl::StatusOr<std::span<std::byte>> Session::ResolveBulk(const ipc::BulkRef& ref) const {
  absl::StatusOr<std::span<std::byte>> bytes = bulk_.Resolve(ref);
  if (!bytes.ok()) return ClientError(CUDA_ERROR_INVALID_VALUE, bytes.status().message());
  return bytes;
}

absl::StatusOr<CUdeviceptr> Session::Allocate(uint64_t size) {
  const uint64_t used = allocations_.total_bytes();
  const uint64_t limit = memory_limit();
  if (size > limit || used > limit - size) {
    TALLY_LOG_WARN(
        "client {} (pid {}, '{}'): an allocation of {} bytes refused: it holds {} of its {} "
        "bytes of device memory",
        client_.client_id, client_.pid, client_.command, size, used, limit);
    return ClientError(CUDA_ERROR_OUT_OF_MEMORY,
                       fmt::format("{} bytes more would exceed this client's device-memory "
                                   "limit of {} bytes ({} in use)",
                                   size, limit, used));
  }
  TALLY_RETURN_IF_ERROR(HoldMemory("device memory"));
  CUdeviceptr pointer = 0;
  if (fence_ != nullptr) {
    // The partition's chunks were given to the client as they were mapped.
    TALLY_ASSIGN_OR_RETURN(pointer, fence_->partition().Allocate(size));
  } else {
    TALLY_RETURN_IF_ERROR(CheckCu(api().cuMemAlloc(&pointer, size), "cuMemAlloc"));
    if (const absl::Status claimed = ClaimMemory(pointer); !claimed.ok()) {
      api().cuMemFree(pointer);
      return claimed;
    }
  }
  allocations_.Insert(pointer, size);
  return pointer;
}

absl::Status Session::FreeDeviceMemory(uint64_t base) {
  if (fence_ != nullptr) return fence_->partition().Free(base);
  return CheckCu(api().cuMemFree(base), "cuMemFree");
}

absl::Status Session::Fence(KernelLaunch& launch) {
  if (fence_ == nullptr) return absl::OkStatus();
  if (!launch.kernel->fenced && server_.unfenced_gate != nullptr) {
    launch.unfenced = true;
    return absl::OkStatus();
  }
  if (!launch.kernel->fenced) {
    unfenced_refused_.fetch_add(1, std::memory_order_relaxed);
    return ClientError(
        CUDA_ERROR_NOT_SUPPORTED,
        fmt::format("kernel {} cannot be fenced ({}), and tally-server --isolation {}{} runs no "
                    "kernel unfenced",
                    launch.kernel->signature.name, launch.kernel->fence_refusal,
                    IsolationName(server_.isolation),
                    server_.isolation == Isolation::kFenced ? " --unfenceable refuse" : ""));
  }
  launch.fence = fence_->ParamsFor(*launch.module);
  return absl::OkStatus();
}

absl::Status Session::HoldMemory(std::string_view what) const {
  UnfencedGate* const gate = server_.unfenced_gate;
  if (gate == nullptr || gate->HoldMemory(client_.client_id)) return absl::OkStatus();
  return ClientError(
      CUDA_ERROR_OUT_OF_MEMORY,
      fmt::format("no {} for this client while another client's kernel that cannot be fenced "
                  "runs alone on the device (tally-server --unfenceable alone), which it did "
                  "for longer than {} ms",
                  what, gate->wait().count()));
}

absl::Status Session::ClaimMemory(CUdeviceptr base) const {
  const auto set_tenant = server_.backend.extensions().mem_set_tenant;
  if (set_tenant == nullptr) return absl::OkStatus();
  return CheckCu(set_tenant(base, tenant()), "tallyEmuMemSetTenant");
}

namespace {

// --isolation strict loads no code that cannot be fenced.
absl::Status RefuseUnfenced(const SharedModule& module) {
  constexpr std::string_view kRule =
      "tally-server --isolation strict loads no module with code that cannot be fenced";
  if (module.parsed().machine_code) {
    return ClientError(CUDA_ERROR_NOT_SUPPORTED,
                       fmt::format("the module is machine code only (no PTX to fence): {}", kRule));
  }
  for (const auto& [name, kernel] : module.kernels()) {
    if (kernel.fenced) continue;
    return ClientError(CUDA_ERROR_NOT_SUPPORTED, fmt::format("kernel {} cannot be fenced ({}): {}",
                                                             name, kernel.fence_refusal, kRule));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Session::ClaimModule(const SharedModule& module) {
  if (server_.isolation == Isolation::kStrict) TALLY_RETURN_IF_ERROR(RefuseUnfenced(module));
  if (!module.parsed().state_variables.empty() || module.parsed().redirects_device_output) {
    TALLY_RETURN_IF_ERROR(HoldMemory("module variables"));
  }
  if (module.parsed().redirects_device_output) BindDeviceOutput(module);
  const auto set_tenant = server_.backend.extensions().module_set_tenant;
  if (set_tenant == nullptr || module.parsed().state_variables.empty()) return absl::OkStatus();
  return CheckCu(set_tenant(module.module(), tenant()), "tallyEmuModuleSetTenant");
}

void Session::BindDeviceOutput(const SharedModule& module) {
  absl::StatusOr<std::pair<CUdeviceptr, size_t>> variable =
      module.FindGlobal(kDeviceOutputVariable);
  absl::StatusOr<const DeviceOutputRing*> ring =
      variable.ok() ? device_output_->Ring(api()) : variable.status();
  absl::Status bound = ring.ok() ? (*ring)->Bind(variable->first, variable->second) : ring.status();
  // The kernels still run; what they print is lost, as from a full printf buffer.
  if (!bound.ok()) {
    TALLY_LOG_WARN("client {}: its kernels' printf output is lost: {}", client_.client_id,
                   bound.ToString());
  }
}

CUresult Session::StickyError() {
  if (sticky_error_ != CUDA_SUCCESS) return sticky_error_;
  if (fence_ != nullptr && fence_->violation()->Set()) {
    sticky_error_ = CUDA_ERROR_ILLEGAL_ADDRESS;
    fence_violated_.store(true, std::memory_order_relaxed);
    RecordStickyError(
        "a kernel of it reached for memory that is not its own (the fence sent the "
        "access to the client's own partition); other clients are not affected");
    return sticky_error_;
  }
  if (ContextFaults* faults = server_.faults; faults != nullptr) {
    if (!faults->faulted()) return CUDA_SUCCESS;
    sticky_error_ = faults->ErrorFor(client_.client_id, context_generation_);
    if (sticky_error_ != CUDA_SUCCESS) {
      RecordStickyError("the device context it shares with every client faulted");
    }
    return sticky_error_;
  }
  const auto get_error = server_.backend.extensions().tenant_get_error;
  if (get_error == nullptr) return CUDA_SUCCESS;
  sticky_error_ = get_error(tenant());
  if (sticky_error_ != CUDA_SUCCESS) {
    RecordStickyError("a kernel of it faulted; other clients are not affected");
  }
  return sticky_error_;
}

void Session::RecordStickyError(std::string_view cause) {
  reported_sticky_error_.store(sticky_error_, std::memory_order_relaxed);
  TALLY_LOG_WARN("client {} (pid {}, '{}'): {} ({}); every later call of this client fails "
                 "with that error",
                 client_.client_id, client_.pid, client_.command, cause,
                 CuResultText(sticky_error_));
}

uint64_t Session::VisibleTotalMemory() const {
  return std::min<uint64_t>(server_.device_info.total_memory, memory_limit());
}

absl::Status Session::CheckDeviceRange(uint64_t address, uint64_t size) const {
  if (globals_.CheckRange(address, size).ok()) return absl::OkStatus();
  if (host_blocks_.CheckRange(address, size).ok()) return absl::OkStatus();
  return allocations_.CheckRange(address, size);
}

absl::Status Session::AddHostBlock(uint64_t address, uint64_t size) {
  constexpr uint64_t kPage = 4096;
  const auto region = reinterpret_cast<uint64_t>(host_region_.data());
  const bool inside = address >= region && address - region <= host_region_.size() &&
                      size <= host_region_.size() - (address - region);
  if (!inside || size == 0 || address % kPage != 0 || size % kPage != 0) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("[0x%x, +%d) is not a page-aligned range of the client's "
                                       "host region [0x%x, +%d)",
                                       address, size, region, host_region_.size()));
  }
  const uint64_t pinned = host_blocks_.total_bytes();
  const uint64_t pinned_limit = client_limits_.pinned_limit;
  if (size > pinned_limit || pinned > pinned_limit - size) {
    TALLY_LOG_WARN(
        "client {} (pid {}, '{}'): {} bytes of page-locked memory refused: it holds {} of its {}",
        client_.client_id, client_.pid, client_.command, size, pinned, pinned_limit);
    return ClientError(CUDA_ERROR_OUT_OF_MEMORY,
                       fmt::format("{} bytes more would exceed this client's page-locked memory "
                                   "limit of {} bytes (tally-server --client-pinned-limit)",
                                   size, pinned_limit));
  }
  if (host_blocks_.Overlaps(address, size)) {
    return ClientError(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                       absl::StrFormat("[0x%x, +%d) overlaps a page-locked block", address, size));
  }
  TALLY_RETURN_IF_ERROR(HoldMemory("page-locked memory"));
  void* const pointer = reinterpret_cast<void*>(address);
  TALLY_RETURN_IF_ERROR(
      CheckCu(api().cuMemHostRegister(pointer, size,
                                      CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE),
              "cuMemHostRegister"));
  // The design relies on unified addressing: the block's device pointer is its host address.
  CUdeviceptr device = 0;
  const CUresult mapped = api().cuMemHostGetDevicePointer(&device, pointer, 0);
  if (mapped != CUDA_SUCCESS || device != address) {
    api().cuMemHostUnregister(pointer);
    return ClientError(CUDA_ERROR_NOT_SUPPORTED,
                       "the device cannot use host addresses as device pointers (no unified "
                       "addressing): page-locked memory cannot be shared");
  }
  if (const absl::Status claimed = ClaimMemory(device); !claimed.ok()) {
    api().cuMemHostUnregister(pointer);
    return claimed;
  }
  host_blocks_.Insert(address, size);
  return absl::OkStatus();
}

absl::Status Session::RemoveHostBlock(uint64_t address) {
  return host_blocks_.Remove(address).status();
}

absl::Status Session::TakeDeferredError() {
  const DeferredError error = server_.dispatcher.TakeDeferredError(*queue_);
  if (error.result == CUDA_SUCCESS) return absl::OkStatus();
  return ClientError(error.result,
                     absl::StrFormat("earlier asynchronous work failed: %s: %s",
                                     error.what.empty() ? "a queued call" : error.what,
                                     CuResultText(error.result)));
}

void Session::EnqueueFailure(CUresult result, std::string what) {
  Enqueue(nullptr, [&dispatcher = server_.dispatcher, queue = queue_.get(), result,
                    what = std::move(what)]() mutable {
    dispatcher.DeferError(*queue, result, std::move(what));
    return result;
  });
}

void Session::CountLibraryCall(ipc::Library library) {
  if (library == ipc::Library::kNone) return;
  library_calls_[ipc::LibrarySlot(library)].fetch_add(1, std::memory_order_relaxed);
}

VendorBlas* Session::vendor_blas(ipc::Library library) const {
  if (!ipc::Contains(vendor_libraries_, library)) return nullptr;
  return server_.vendor->blas.get();
}

void Session::CountVendorCall(ipc::Library library) {
  if (library == ipc::Library::kNone) return;
  vendor_calls_[ipc::LibrarySlot(library)].fetch_add(1, std::memory_order_relaxed);
}

ipc::ClientStatus Session::Status() {
  ipc::ClientStatus status{};
  status.client_id = client_.client_id;
  status.pid = client_.pid;
  const ClientPriority priority = server_.dispatcher.priority(*queue_);
  status.client_priority = ipc::WireClientPriority::From(priority);
  status.slowdown_budget = ipc::WireSlowdownBudget::From(server_.dispatcher.budget(*queue_));
  status.measured_slowdown = server_.dispatcher.measured_slowdown(*queue_).value_or(-1);
  const SchedulingStats& stats = server_.dispatcher.stats(*queue_);
  status.kernels_original = stats.original;
  status.kernels_sliced = stats.sliced;
  status.slices = stats.slices;
  status.kernels_preemptible = stats.preemptible;
  status.kernels_preempted = stats.preempted;
  status.preemptions = stats.preemptions;
  status.resumes = stats.resumes;
  status.risky_launches = stats.risky;
  status.unfit_launches = stats.unfit;
  status.held_ns = stats.held_ns;
  status.preemption_latency_ns_total = stats.preemption_latency_ns_total;
  status.preemption_latency_ns_max = stats.preemption_latency_ns_max;
  status.preemption_latencies = stats.preemption_latencies;
  for (const ipc::Library library : ipc::kLibraries) {
    status.library_calls[library] =
        library_calls_[ipc::LibrarySlot(library)].load(std::memory_order_relaxed);
    status.vendor_library_calls[library] =
        vendor_calls_[ipc::LibrarySlot(library)].load(std::memory_order_relaxed);
  }
  status.memory_bytes = allocations_.total_bytes();
  status.allocations = allocations_.count();
  status.memory_limit = memory_limit();
  status.pinned_bytes = host_blocks_.total_bytes();
  status.pinned_limit = client_limits_.pinned_limit;
  status.streams = streams_.count();
  status.events = events_.count();
  status.modules = modules_.count();
  status.queued_commands = server_.dispatcher.queued(*queue_);  // any thread: not the batch
  status.fence_violated = fence_violated_.load(std::memory_order_relaxed) ? 1 : 0;
  status.unfenced_refused =
      unfenced_refused_.load(std::memory_order_relaxed) + stats.unfenced_refused;
  status.unfenced_alone = stats.unfenced_alone;
  status.unfenced_waiting = stats.unfenced_waiting;
  status.sticky_error = reported_sticky_error_.load(std::memory_order_relaxed);
  ipc::CopyText(client_.command, status.command, sizeof(status.command));
  ipc::CopyText(client_.grant, status.grant, sizeof(status.grant));
  return status;
}

}  // namespace tally::server
