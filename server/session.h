// One connected client: its own tables of streams, events, modules, functions and allocations,
// against which every handle and pointer range it sends is checked, and its command queue.
// Destroying the session frees everything the client owned.
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ipc/bulk.h"
#include "ipc/connection.h"
#include "ipc/control.h"
#include "ipc/cuda_calls.h"
#include "ipc/library_calls.h"
#include "server/allocation_table.h"
#include "server/backend/backend.h"
#include "server/client_fence.h"
#include "server/context_faults.h"
#include "server/device_output.h"
#include "server/dispatcher.h"
#include "server/handle_table.h"
#include "server/host_callbacks.h"
#include "server/isolation.h"
#include "server/kernel_forms.h"
#include "server/libraries/vendor_libraries.h"
#include "server/mem_pools.h"
#include "server/module_registry.h"
#include "server/unfenced_gate.h"
#include "server/waiter_pool.h"

namespace tally::server {

class SessionRegistry;

// What one client may hold at most (tally-server's flags; the defaults are theirs).
struct SessionLimits {
  // Commands accepted and not yet issued. The session stops reading the client's requests
  // while its queue is full (the client then blocks on its ring, as on a full push buffer);
  // a batch may overshoot by up to 127.
  size_t max_queued_commands = 1024;
  size_t max_streams = 1024;
  size_t max_events = 16384;
  size_t max_modules = 1024;
  uint64_t max_module_bytes = ipc::kMaxModuleImage;  // one module image
  // Device memory (cudaMalloc and friends) and page-locked host memory; ipc::kNoLimit for none.
  // A client's own wish (tally-run --memory-limit) may lower its device-memory limit.
  uint64_t memory_limit = ipc::kNoLimit;
  uint64_t pinned_limit = ipc::kNoLimit;
};

// What sessions share: one per server.
struct ServerContext {
  const Backend& backend;
  ModuleRegistry& modules;
  Dispatcher& dispatcher;
  const ipc::GetDeviceInfoResponse& device_info;
  SessionRegistry* sessions = nullptr;  // where sessions list themselves (tally-ctl status)
  // A fault of the context every client shares (null where the backend keeps faults to the
  // client, context_faults.h).
  ContextFaults* faults = nullptr;
  // The limits sessions get unless their creator says otherwise (Session::Create).
  SessionLimits limits = {};
  // The vendor libraries and whose calls they run (null: none).
  const VendorLibraries* vendor = nullptr;
  // --isolation: with fenced or strict, each session has a ClientFence.
  Isolation isolation = Isolation::kNone;
  // --isolation fenced --unfenceable alone: where unfenced kernels are admitted (null otherwise).
  UnfencedGate* unfenced_gate = nullptr;
  // The slowdown budget of clients that give none (tally-server --slowdown-budget).
  SlowdownBudget slowdown_budget = {};
};

// A client stream. Blocking streams (all but cudaStreamNonBlocking ones) and the client's
// default stream follow the legacy default stream's implicit synchronisation (CUDA Runtime API,
// "Stream synchronization behavior"), which the session reproduces per client with `marker`.
// Shared: a waiter thread holds it while it waits, so that a stream the client destroys
// meanwhile stays valid until the wait ends. The last holder destroys the backend objects.
struct StreamEntry {
  StreamEntry(const DriverApi& api, bool blocking) : api(&api), blocking(blocking) {}
  StreamEntry(const StreamEntry&) = delete;
  StreamEntry& operator=(const StreamEntry&) = delete;
  ~StreamEntry();

  const DriverApi* api;
  CUstream stream = nullptr;
  bool blocking = true;
  CUevent marker = nullptr;  // recorded on this stream when another must wait for its tail
  StreamGate gate;            // host functions on this stream (host_callbacks.h)
  // The ticket (Session::enqueued) of the last command enqueued on this stream; session thread.
  uint64_t last_work = 0;
};
using StreamRef = std::shared_ptr<StreamEntry>;

// A client event, shared for the same reason as StreamEntry.
struct EventEntry {
  EventEntry(const DriverApi& api, CUevent event) : api(&api), event(event) {}
  EventEntry(const EventEntry&) = delete;
  EventEntry& operator=(const EventEntry&) = delete;
  ~EventEntry() { api->cuEventDestroy(event); }

  const DriverApi* api;
  CUevent event;
  uint64_t recorded_at = 0;  // the ticket of its last record command; session thread
};
using EventRef = std::shared_ptr<EventEntry>;

// A kernel as one client sees it: the module stays loaded while the client holds the handle.
struct FunctionEntry {
  std::shared_ptr<SharedModule> module;
  const Kernel* kernel = nullptr;
  uint64_t module_handle = 0;  // the client's handle the function was found through
};

// A module image arriving in pieces (RegisterFatbinRequest), until its last piece.
struct ModuleUpload {
  uint64_t content_hash = 0;
  uint64_t size = 0;
  std::vector<std::byte> bytes;  // the pieces so far, copied out of the bulk area
};

// What cudaDeviceReset destroys of a client's: everything but its default stream and its
// modules, taken out of the session's tables (Session::TakeOwned).
struct OwnedResources {
  std::vector<StreamRef> streams;
  std::vector<EventRef> events;
  std::vector<uint64_t> allocations;  // device pointers
  std::vector<uint64_t> host_blocks;  // registered host-region blocks
  // The client's fence (--isolation fenced|strict), whose partition holds the allocations: shared
  // with the session for cudaDeviceReset (the fence stays), the last holder at the client's end.
  std::shared_ptr<ClientFence> fence;
  // Destroys and frees them (any thread). The client's work that used them must have finished.
  void Release(const DriverApi& api);
};

class Session {
 public:
  // Creates the client's default stream. The calling thread must have the context current.
  // `host_region` is the client's page-locked memory, mapped at the same address in both
  // processes (empty when the segment has none). `context_generation`: what
  // ContextFaults::Join gave the session (with server.faults). `limits`: what the client may
  // hold (default: server.limits).
  static absl::StatusOr<std::unique_ptr<Session>> Create(
      ServerContext& server, const ipc::ClientInfo& client, ipc::BulkArea bulk,
      std::span<std::byte> host_region = {}, uint64_t context_generation = 0,
      std::optional<SessionLimits> limits = std::nullopt);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // Close without a deadline, unless Close already ran.
  ~Session();
  // Ends the session: discards queued work, waits for the client's work on the device until
  // `deadline`, then frees all it owned. False when work still ran at the deadline (a runaway
  // kernel): nothing is freed then (the device may still write to it), the log says what was
  // abandoned, and the caller must never destroy the session (waiter threads may still use it),
  // nor unmap the client's segment.
  bool Close(std::chrono::steady_clock::time_point deadline);

  const ipc::ClientInfo& client() const { return client_; }
  ServerContext& server() { return server_; }
  // What this client may hold: the server's limits when it connected (a reload changes them for
  // clients that connect later).
  const SessionLimits& client_limits() const { return client_limits_; }
  const DriverApi& api() const { return server_.backend.api(); }

  absl::StatusOr<uint64_t> CreateStream(bool blocking, StreamPriority priority);
  // CUDA_ERROR_OUT_OF_MEMORY, naming the limit and its flag, when the client already holds
  // `limit` objects of a kind (`held`); logged.
  absl::Status CheckCount(size_t held, size_t limit, std::string_view what,
                          std::string_view flag) const;
  // Queued work on the stream is issued first; work already on it still completes.
  absl::Status DestroyStream(uint64_t handle);
  // The backend stream of `handle` (0 is the client's default stream), for waiting on it.
  absl::StatusOr<CUstream> FindStream(uint64_t handle);
  // As FindStream, held for a waiter thread.
  absl::StatusOr<StreamRef> HoldStream(uint64_t handle);
  // As FindStream, for enqueueing work on it: first enqueues the legacy default stream's
  // implicit ordering (default-stream work after all blocking streams' work, blocking-stream
  // work after the default stream's).
  absl::StatusOr<CUstream> StreamForWork(uint64_t handle);
  // As StreamForWork, the entry (on the session thread: valid until the next call).
  absl::StatusOr<StreamEntry*> EntryForWork(uint64_t handle);
  // Every stream of the client, held for a waiter thread.
  std::vector<StreamRef> HoldAllStreams();
  // The bytes of a bulk block; CUDA_ERROR_INVALID_VALUE when it is not inside the area.
  absl::StatusOr<std::span<std::byte>> ResolveBulk(const ipc::BulkRef& ref) const;

  // Device memory: CUDA_ERROR_OUT_OF_MEMORY (logged, naming the client) when `size` more bytes
  // would take the client past its limit; then allocates and records it.
  absl::StatusOr<CUdeviceptr> Allocate(uint64_t size);
  // The client's device-memory limit (ipc::kNoLimit for none): tally-ctl limit sets it from
  // any thread; allocations already made stay.
  uint64_t memory_limit() const { return memory_limit_.load(std::memory_order_relaxed); }
  void set_memory_limit(uint64_t limit) { memory_limit_.store(limit, std::memory_order_relaxed); }
  // The device's memory as the client sees it: its limit is the device's size.
  uint64_t VisibleTotalMemory() const;

  // CUDA_ERROR_INVALID_VALUE unless [address, address + size) lies in one of the client's
  // allocations, module variables or host blocks (mapped host memory is device memory too).
  absl::Status CheckDeviceRange(uint64_t address, uint64_t size) const;
  // Registers [address, address + size) of the host region with the device (cudaMallocHost and
  // friends): page-aligned, inside the region, overlapping no other host block.
  absl::Status AddHostBlock(uint64_t address, uint64_t size);
  // Takes the host block starting at `address` out of the client's table; the caller unregisters
  // it once the client's work has finished (handlers/host_memory.cc).
  absl::Status RemoveHostBlock(uint64_t address);
  // CUDA_ERROR_INVALID_VALUE unless [address, address + size) lies in one host block.
  absl::Status CheckHostRange(uint64_t address, uint64_t size) const {
    return host_blocks_.CheckRange(address, size);
  }
  // Takes the client's streams (not the default stream), events, allocations and host blocks
  // out of its tables, for cudaDeviceReset and cleanup.
  OwnedResources TakeOwned();
  // A module variable of the client's, which copies may then target.
  void AddGlobal(uint64_t address, uint64_t size) { globals_.Insert(address, size); }

  // Queues stream-ordered work for `stream` (null: none), on the session thread. Commands are
  // gathered and handed to the dispatcher in batches (one lock and one wake-up for many
  // launches): HandOver passes them on. The request loop hands over whenever the client's ring
  // runs empty, Ticket does first, and a full batch goes at once, so the device never waits for
  // a client that keeps posting. HandOver waits while the client's queue is full
  // (SessionLimits::max_queued_commands): the session thread then reads no more requests, so a
  // client that posts without end blocks on its full ring and the server's memory does not
  // grow. The wait ends when the client dies, and is skipped while the client owes the answer
  // to a host function (which it posts behind its other requests), up to four times the bound.
  void Enqueue(CUstream stream, Command command);
  // Queues a kernel launch; the scheduling policy decides when and in which form it runs.
  void EnqueueKernel(KernelLaunch launch);
  // Counts a call of `library` served by Tally's own kernels (the launch that began it was
  // queued); kNone counts nothing.
  void CountLibraryCall(ipc::Library library);
  // The libraries whose calls run in the vendor library for this client (LibraryModes),
  // decided at its connection.
  ipc::LibrarySet vendor_libraries() const { return vendor_libraries_; }
  // The vendor cuBLAS (and cuBLASLt) when this client's calls of `library` run in it, else null.
  VendorBlas* vendor_blas(ipc::Library library) const;
  // Counts a call of `library` queued to run in the vendor library.
  void CountVendorCall(ipc::Library library);
  // Queues a host function (host_callbacks.h).
  void EnqueueHostFunction(HostFunction function);
  // Queues the failure of a one-way call that was refused (`what` says which and why), to be
  // reported like a failure of the work itself, at the next synchronising call.
  void EnqueueFailure(CUresult result, std::string what);
  void HandOver();
  // How HandOver learns that waiting for room is pointless: the client died or the server
  // stops. Set once by the server before serving; without it the client counts as alive.
  void set_client_alive(std::function<bool()> alive) { client_alive_ = std::move(alive); }
  // Names the point after everything the client has enqueued so far, for WaitIssued.
  uint64_t Ticket() {
    HandOver();
    return server_.dispatcher.Ticket(*queue_);
  }
  // Waits until the work before `ticket` has been issued (any thread may wait).
  void WaitIssued(uint64_t ticket) { server_.dispatcher.WaitIssued(*queue_, ticket); }
  bool Issued(uint64_t ticket) { return server_.dispatcher.Issued(*queue_, ticket); }
  // Waits until the client's queued work has been issued; every call that reads or destroys
  // state that queued work may use does this first, which keeps the client's order.
  void Flush() { WaitIssued(Ticket()); }
  // The ticket of the last command enqueued so far (batched ones count): commands are numbered
  // from 1 in the order Enqueue receives them, as the dispatcher numbers tickets.
  uint64_t enqueued() const { return enqueued_; }
  // Whether the commands up to `ticket` have been issued; hands the batch over first when they
  // are still in it. Never waits (cudaStreamQuery, cudaEventQuery).
  bool WorkIssued(uint64_t ticket) {
    if (ticket > enqueued_ - batch_.size()) HandOver();
    return Issued(ticket);
  }
  // The first failure of the client's asynchronous work since the last synchronising call,
  // as a ClientError; OK when none.
  absl::Status TakeDeferredError();
  // The client's sticky error: once a kernel of its faulted (on the emulated GPU, whose tenants
  // keep such a fault to the client), every later call of the client fails with it, as every
  // call in a CUDA context does after a fault; where the context is shared, once any client's
  // kernel faulted it (context_faults.h). CUDA_SUCCESS while none; session thread.
  CUresult StickyError();
  // How answers built off the session thread learn of a fault of the shared context.
  ContextFaultView fault_view() const {
    return {server_.faults, client_.client_id, context_generation_,
            fence_ != nullptr ? fence_->violation() : nullptr};
  }
  // Under --isolation fenced|strict: gives a launch of a fenced kernel the client's ranges, and
  // refuses one of a kernel that cannot be fenced (CUDA_ERROR_NOT_SUPPORTED), or under
  // --unfenceable alone marks it for the dispatcher to run alone. Nothing otherwise.
  absl::Status Fence(KernelLaunch& launch);
  // Gives device memory of the client (Allocate's, out of its allocation table already) back.
  absl::Status FreeDeviceMemory(uint64_t base);
  // Makes the client's module's variables (a module with module state is the client's alone)
  // memory that only the client's kernels may touch (emulated GPU), and points its device
  // output at the client's ring where it was redirected (ptx_transform/device_output.h).
  absl::Status ClaimModule(const SharedModule& module);

  // What the client's kernels printed on the device, on its way to the client (device_output.h).
  DeviceOutputSource device_output() const {
    return {device_output_, server_.backend.extensions().tenant_take_output, tenant()};
  }

  // Where calls that may block wait (call_dispatch.h, kWait), off the session thread.
  WaiterPool& waiters() { return *waiters_; }
  // The client's host functions (cudaLaunchHostFunc), run in the client in stream order.
  HostCallbacks& host_callbacks() { return *host_callbacks_; }
  // What tally-ctl status reports; callable from any thread.
  ipc::ClientStatus Status();

  HandleTable<EventRef>& events() { return events_; }
  HandleTable<std::shared_ptr<SharedModule>>& modules() { return modules_; }
  ModuleUpload& module_upload() { return module_upload_; }
  HandleTable<FunctionEntry>& functions() { return functions_; }
  // The context limits this client set (cudaDeviceSetLimit), by CUlimit.
  absl::flat_hash_map<uint32_t, uint64_t>& limits() { return limits_; }
  AllocationTable& allocations() { return allocations_; }
  MemPools& mem_pools() { return mem_pools_; }
  // The client's command queue, which work that outlives its command reports failures to.
  const std::shared_ptr<Dispatcher::ClientQueue>& queue() const { return queue_; }
  // tally-ctl priority: effective at the scheduler's next decision (any thread).
  void SetPriority(ClientPriority priority) { server_.dispatcher.SetPriority(*queue_, priority); }
  // tally-ctl budget: effective at the scheduler's next decision (any thread).
  void SetBudget(const SlowdownBudget& budget) { server_.dispatcher.SetBudget(*queue_, budget); }

 private:
  Session(ServerContext& server, const ipc::ClientInfo& client, ipc::BulkArea bulk,
          std::span<std::byte> host_region, uint64_t context_generation,
          const SessionLimits& limits);
  void BindDeviceOutput(const SharedModule& module);
  // Logs the client's new sticky error and keeps it for Status().
  void RecordStickyError(std::string_view cause);

  ServerContext& server_;
  ipc::ClientInfo client_;
  const SessionLimits client_limits_;
  const ipc::LibrarySet vendor_libraries_;
  const uint64_t context_generation_;
  ipc::BulkArea bulk_;
  std::span<std::byte> host_region_;
  std::atomic<uint64_t> memory_limit_;
  // CountLibraryCall's counts, by ipc::LibrarySlot; read by Status on any thread.
  std::array<std::atomic<uint64_t>, ipc::kLibraryCount> library_calls_{};
  std::array<std::atomic<uint64_t>, ipc::kLibraryCount> vendor_calls_{};  // CountVendorCall's
  std::shared_ptr<Dispatcher::ClientQueue> queue_;
  std::vector<QueuedCommand> batch_;  // enqueued, not yet handed over
  uint64_t enqueued_ = 0;             // commands ever enqueued (Ticket numbers them alike)
  // The stream the last StreamForWork named: Enqueue records each command as its last work, so
  // that a query of one stream does not wait for other streams' work (stream.cc).
  StreamEntry* work_stream_ = nullptr;
  size_t overflow_ = 0;  // commands handed over beyond the bound while a host function waited
  std::function<bool()> client_alive_;
  uint8_t Tag() const { return static_cast<uint8_t>(client_.client_id.value()); }
  // The emulated GPU's tenant of this client's streams, memory and modules: its id.
  unsigned long long tenant() const { return client_.client_id.value(); }
  absl::StatusOr<StreamRef> MakeStream(bool blocking, StreamPriority priority);
  // On the emulated GPU, makes the allocation at `base` the client's: only its kernels may
  // touch it (cuda_abi/driver_extensions.h); nothing elsewhere.
  absl::Status ClaimMemory(CUdeviceptr base) const;
  // Under --unfenceable alone, before the client acquires memory a kernel could reach: waits
  // (bounded) while another client's unfenced kernel runs alone; CUDA_ERROR_OUT_OF_MEMORY then.
  absl::Status HoldMemory(std::string_view what) const;
  // Appends to the batch, numbering the command and noting it as its stream's last work.
  void Batch(QueuedCommand command);
  absl::StatusOr<StreamRef*> FindEntry(uint64_t handle);

  std::unique_ptr<WaiterPool> waiters_;
  std::shared_ptr<HostCallbacks> host_callbacks_;
  StreamRef default_stream_;
  HandleTable<StreamRef> streams_{1, Tag(), "stream"};
  HandleTable<EventRef> events_{2, Tag(), "event"};
  HandleTable<std::shared_ptr<SharedModule>> modules_{3, Tag(), "module"};
  ModuleUpload module_upload_;
  absl::flat_hash_map<uint32_t, uint64_t> limits_;
  HandleTable<FunctionEntry> functions_{4, Tag(), "function"};
  AllocationTable allocations_;
  MemPools mem_pools_{Tag()};  // their blocks are in allocations_
  // Module variables: only in per-client modules (ModuleRegistry shares only stateless ones).
  AllocationTable globals_;
  AllocationTable host_blocks_;  // registered with the backend
  CUresult sticky_error_ = CUDA_SUCCESS;  // StickyError()
  // --isolation fenced|strict: the client's partition and violation word; null otherwise.
  std::shared_ptr<ClientFence> fence_;
  std::atomic<uint64_t> unfenced_refused_{0};  // launches Fence refused
  std::atomic<bool> fence_violated_{false};    // StickyError found the violation word set
  std::atomic<uint32_t> reported_sticky_error_{CUDA_SUCCESS};  // sticky_error_, for Status()
  std::shared_ptr<DeviceOutput> device_output_ = std::make_shared<DeviceOutput>();
  bool closed_ = false;
};

}  // namespace tally::server
