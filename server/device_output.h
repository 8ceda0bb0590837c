// A client's device output (kernel printf, failed asserts' messages) on its way to the client:
// taken from the emulated GPU, which keeps it per tenant (tallyEmuTenantTakeOutput), when a
// synchronising call of the client is answered, and handed to the client, which prints it
// before that call returns (ipc::kFlagDeviceOutput, TakeDeviceOutput). On NVIDIA's driver, which
// has no per-client output, the text comes from the client's device output ring instead
// (device_output_ring.h), which its kernels write into.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "cuda_abi/driver_extensions.h"
#include "server/backend/backend.h"
#include "server/device_output_ring.h"

namespace tally::server {

class DeviceOutput {
 public:
  // Most text held for a client that does not take it (the emulator keeps at most as much).
  static constexpr size_t kMaxHeld = size_t{1} << 20;
  // Most text in one TakeDeviceOutput response.
  static constexpr size_t kMaxTaken = size_t{16} << 10;

  // Moves what the tenant's kernels printed from the emulated GPU, or from the client's ring,
  // here; whether anything is held for the client now. Any thread.
  bool Collect(PFN_tallyEmuTenantTakeOutput take, uint64_t tenant);
  // Appends up to kMaxTaken bytes of held text to `tail` as ipc::DeviceOutputRecords, oldest
  // first; whether more is held. Any thread.
  bool Take(std::vector<std::byte>& tail);
  // Drops whatever is held here and on the device for the tenant (its client has left, its
  // kernels have finished): nothing of it outlives the client.
  void Discard(PFN_tallyEmuTenantTakeOutput take, uint64_t tenant);

  // The client's device output ring, made the first time one of its modules needs it. The
  // calling thread has the backend's context current.
  absl::StatusOr<const DeviceOutputRing*> Ring(const DriverApi& api);
  // Frees the ring: the client's kernels have finished. Context current, as for Ring.
  void ReleaseRing();
  // Leaves the ring allocated for good: a kernel of the client may still write into it.
  void AbandonRing();

 private:
  std::mutex mu_;
  std::vector<std::byte> held_;  // mu_; DeviceOutputRecords with their text
  std::unique_ptr<DeviceOutputRing> ring_;  // mu_
};

// One client's device output as a waiter thread's answer reaches it, without the session (which
// a waiter must not touch, handlers.h): the client's DeviceOutput and where its text comes from.
struct DeviceOutputSource {
  std::shared_ptr<DeviceOutput> output;
  PFN_tallyEmuTenantTakeOutput take = nullptr;  // null: no per-client output (NVIDIA's driver)
  uint64_t tenant = 0;
  // DeviceOutput::Collect.
  bool Collect() const { return output->Collect(take, tenant); }
  void Discard() const { output->Discard(take, tenant); }
};

}  // namespace tally::server
