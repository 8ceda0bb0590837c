// One client's ring of device output on a driver without per-client output (NVIDIA's): its
// kernels write printf records into it (ptx_transform/device_output.h; layout and protocol in
// cuda_abi/device_output_ring.h) and the server reads them at the client's synchronising calls
// (DeviceOutput::Collect). The ring is page-locked host memory of the server mapped for the device
// and allocated here, not by the driver, so that it stays readable after a fault has ended the
// context: a failed assert's message still reaches the client.
//
// Nothing in the ring is trusted: it is the client's kernels' memory. A record that is not
// well-formed stops the reading for good (the client's later output is lost, nothing else).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"

namespace tally::server {

// Reads records out of ring memory (any memory laid out as cuda_abi/device_output_ring.h says).
class DeviceOutputRingReader {
 public:
  using Print = std::function<void(uint32_t stream, std::string_view text)>;
  // `ring`: the tail word, then `capacity` bytes of data from kRingDataOffset (capacity a power
  // of two, ring 8-byte aligned).
  DeviceOutputRingReader(std::byte* ring, uint64_t capacity) : ring_(ring), capacity_(capacity) {}

  // Prints every complete record, oldest first, and gives its space back to the writers. Not
  // concurrently with itself.
  void Drain(const Print& print);
  bool broken() const { return broken_; }

 private:
  // The record's bytes (the header's `size`) from `position`, and zeroes them in the ring.
  std::vector<std::byte> TakeRecord(uint64_t position, uint32_t size);

  std::byte* ring_;
  uint64_t capacity_;
  uint64_t tail_ = 0;
  bool broken_ = false;
};

class DeviceOutputRing {
 public:
  // What CUDA's printf FIFO holds by default (CU_LIMIT_PRINTF_FIFO_SIZE).
  static constexpr uint64_t kCapacity = uint64_t{1} << 20;

  // The control block in device memory and the ring in mapped host memory, of `capacity` bytes
  // (a power of two, at least 64). The calling thread has the backend's context current.
  static absl::StatusOr<std::unique_ptr<DeviceOutputRing>> Create(const DriverApi& api,
                                                                  uint64_t capacity = kCapacity);
  DeviceOutputRing(const DeviceOutputRing&) = delete;
  DeviceOutputRing& operator=(const DeviceOutputRing&) = delete;
  // Unregisters and frees both: the client's kernels have finished. The calling thread has the
  // backend's context current (after a context reset the driver's part is gone already).
  ~DeviceOutputRing();

  // Makes the kernels of a module write here: sets its kDeviceOutputVariable (at `variable`,
  // `size` bytes). The calling thread has the backend's context current.
  absl::Status Bind(CUdeviceptr variable, size_t size) const;
  void Drain(const DeviceOutputRingReader::Print& print) { reader_.Drain(print); }

 private:
  DeviceOutputRing(const DriverApi& api, std::byte* ring, uint64_t capacity)
      : api_(api), ring_(ring), capacity_(capacity), reader_(ring, capacity) {}

  const DriverApi& api_;
  std::byte* ring_;  // std::aligned_alloc'd
  uint64_t capacity_;
  bool registered_ = false;  // with the driver, mapped for the device
  CUdeviceptr ring_on_device_ = 0;
  CUdeviceptr control_ = 0;
  CUstream stream_ = nullptr;  // the control block's zeroing and the bindings' copies
  DeviceOutputRingReader reader_;
};

}  // namespace tally::server
