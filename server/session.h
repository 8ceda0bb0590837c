// One connected client: its own tables of streams, events, modules, functions and allocations,
// against which every handle and pointer range it sends is checked, and its command queue.
// Destroying the session frees everything the client owned.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "ipc/bulk.h"
#include "ipc/connection.h"
#include "ipc/cuda_calls.h"
#include "server/allocation_table.h"
#include "server/backend/backend.h"
#include "server/dispatcher.h"
#include "server/handle_table.h"
#include "server/kernel_launcher.h"
#include "server/module_registry.h"

namespace tally::server {

// What sessions share: one per server.
struct ServerContext {
  const Backend& backend;
  ModuleRegistry& modules;
  Dispatcher& dispatcher;
  const ipc::GetDeviceInfoResponse& device_info;
  KernelLauncher& launcher;
};

// A client stream. Blocking streams (all but cudaStreamNonBlocking ones) and the client's
// default stream follow the legacy default stream's implicit synchronisation (CUDA Runtime API,
// "Stream synchronization behavior"), which the session reproduces per client with `marker`.
struct StreamEntry {
  CUstream stream = nullptr;
  bool blocking = true;
  CUevent marker = nullptr;  // recorded on this stream when another must wait for its tail
};

// A kernel as one client sees it: the module stays loaded while the client holds the handle.
struct FunctionEntry {
  std::shared_ptr<SharedModule> module;
  const Kernel* kernel = nullptr;
};

class Session {
 public:
  // Creates the client's default stream. The calling thread must have the context current.
  // `host_region` is the client's page-locked memory, mapped at the same address in both
  // processes (empty when the segment has none).
  static absl::StatusOr<std::unique_ptr<Session>> Create(ServerContext& server,
                                                         const ipc::ClientInfo& client,
                                                         ipc::BulkArea bulk,
                                                         std::span<std::byte> host_region = {});
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  // Discards queued work, waits for the client's streams, frees all it owned.
  ~Session();

  const ipc::ClientInfo& client() const { return client_; }
  ServerContext& server() { return server_; }
  const DriverApi& api() const { return server_.backend.api(); }

  absl::StatusOr<uint64_t> CreateStream(bool blocking, int priority);
  // Queued work on the stream is issued first; work already on it still completes.
  absl::Status DestroyStream(uint64_t handle);
  // The backend stream of `handle` (0 is the client's default stream), for waiting on it.
  absl::StatusOr<CUstream> FindStream(uint64_t handle);
  // As FindStream, for enqueueing work on it: first enqueues the legacy default stream's
  // implicit ordering (default-stream work after all blocking streams' work, blocking-stream
  // work after the default stream's).
  absl::StatusOr<CUstream> StreamForWork(uint64_t handle);
  // Waits for every stream of the client; the first failure, or CUDA_SUCCESS.
  CUresult SynchronizeStreams();
  // The bytes of a bulk block; CUDA_ERROR_INVALID_VALUE when it is not inside the area.
  absl::StatusOr<std::span<std::byte>> ResolveBulk(const ipc::BulkRef& ref) const;

  // CUDA_ERROR_INVALID_VALUE unless [address, address + size) lies in one of the client's
  // allocations, module variables or host blocks (mapped host memory is device memory too).
  absl::Status CheckDeviceRange(uint64_t address, uint64_t size) const;
  // Registers [address, address + size) of the host region with the device (cudaMallocHost and
  // friends): page-aligned, inside the region, overlapping no other host block.
  absl::Status AddHostBlock(uint64_t address, uint64_t size);
  // After the client's work has finished, unregisters the host block starting at `address`.
  absl::Status RemoveHostBlock(uint64_t address);
  // CUDA_ERROR_INVALID_VALUE unless [address, address + size) lies in one host block.
  absl::Status CheckHostRange(uint64_t address, uint64_t size) const {
    return host_blocks_.CheckRange(address, size);
  }
  // A module variable of the client's, which copies may then target.
  void AddGlobal(uint64_t address, uint64_t size) { globals_.Insert(address, size); }

  void Enqueue(Command command) { server_.dispatcher.Enqueue(*queue_, std::move(command)); }
  // Waits until the client's queued work has been issued; every call that reads or destroys
  // state that queued work may use does this first, which keeps the client's order.
  void Flush() { server_.dispatcher.WaitIssued(*queue_); }
  // Commands enqueued but not yet issued.
  size_t queued() { return server_.dispatcher.queued(*queue_); }
  // The first failure of the client's asynchronous work since the last synchronising call,
  // as a ClientError; OK when none.
  absl::Status TakeDeferredError();

  HandleTable<CUevent>& events() { return events_; }
  HandleTable<std::shared_ptr<SharedModule>>& modules() { return modules_; }
  HandleTable<FunctionEntry>& functions() { return functions_; }
  AllocationTable& allocations() { return allocations_; }
  // Shared with the client's queued launches, which count themselves by form.
  const std::shared_ptr<LaunchStats>& launch_stats() const { return launch_stats_; }

 private:
  Session(ServerContext& server, const ipc::ClientInfo& client, ipc::BulkArea bulk,
          std::span<std::byte> host_region);

  ServerContext& server_;
  ipc::ClientInfo client_;
  ipc::BulkArea bulk_;
  std::span<std::byte> host_region_;
  std::shared_ptr<Dispatcher::ClientQueue> queue_;
  uint8_t Tag() const { return static_cast<uint8_t>(client_.client_id); }
  absl::StatusOr<StreamEntry> MakeStream(bool blocking, int priority);
  absl::StatusOr<StreamEntry*> FindEntry(uint64_t handle);
  void DestroyEntry(const StreamEntry& entry);

  StreamEntry default_stream_;
  HandleTable<StreamEntry> streams_{1, Tag(), "stream"};
  HandleTable<CUevent> events_{2, Tag(), "event"};
  HandleTable<std::shared_ptr<SharedModule>> modules_{3, Tag(), "module"};
  HandleTable<FunctionEntry> functions_{4, Tag(), "function"};
  AllocationTable allocations_;
  // Module variables: only in per-client modules (ModuleRegistry shares only stateless ones).
  AllocationTable globals_;
  AllocationTable host_blocks_;  // registered with the backend
  std::shared_ptr<LaunchStats> launch_stats_ = std::make_shared<LaunchStats>();
};

}  // namespace tally::server
