// The shim's one connection to tally-server, made on first use: typed sync calls and one-way
// posts over the rings, serialised across the application's threads, plus the bulk area and
// the device snapshot. After fork() the child gets errors instead of sharing the parent's rings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/status.h"
#include "common/status.h"
#include "ipc/connection.h"
#include "ipc/cuda_calls.h"
#include "ipc/message.h"

namespace tally::client {

template <typename T>
struct Answer {
  T fields;
  std::vector<std::byte> tail;
};

class Channel {
 public:
  // The process's channel, connecting (and fetching the device snapshot) on the first call. A
  // failure is remembered and returned to every later call.
  static absl::StatusOr<Channel*> Get();

  // Sends a sync request and waits for its response; a CallError becomes a CudaError.
  template <typename Request>
  absl::StatusOr<Answer<typename ipc::CallTraits<Request>::Response>> Call(
      const Request& request, std::span<const std::byte> tail = {});
  // Sends a one-way request.
  template <typename Request>
  absl::Status Post(const Request& request, std::span<const std::byte> tail = {});

  ipc::BulkAllocator& bulk() { return connection_.bulk(); }
  const ipc::GetDeviceInfoResponse& device() const { return device_; }
  // The host region (page-locked memory, same address in the server), or why it is unusable.
  absl::StatusOr<std::span<std::byte>> host_region() const { return connection_.host_region(); }
  // Whether `pointer` lies in the host region: no lock, no system call (copy paths ask).
  bool InHostRegion(const void* pointer) const {
    return reinterpret_cast<uintptr_t>(pointer) - host_region_begin_ < host_region_size_;
  }

 private:
  explicit Channel(ipc::ClientConnection connection) : connection_(std::move(connection)) {}
  static absl::StatusOr<Channel*> Connect();
  absl::Status CheckSameProcess() const;
  // Waits for the response to `sequence` (the caller holds mutex_) and copies it out.
  absl::StatusOr<ipc::ReceivedMessage> AwaitResponse(uint64_t sequence);

  std::mutex mutex_;
  ipc::ClientConnection connection_;
  ipc::GetDeviceInfoResponse device_{};
  uintptr_t host_region_begin_ = 0;
  size_t host_region_size_ = 0;  // 0 when this process could not map the region
  pid_t pid_ = getpid();
  uint64_t next_sequence_ = 1;
};

template <typename Request>
absl::StatusOr<Answer<typename ipc::CallTraits<Request>::Response>> Channel::Call(
    const Request& request, std::span<const std::byte> tail) {
  using Response = typename ipc::CallTraits<Request>::Response;
  TALLY_RETURN_IF_ERROR(CheckSameProcess());
  std::lock_guard lock(mutex_);
  const uint64_t sequence = next_sequence_++;
  TALLY_RETURN_IF_ERROR(ipc::PostMessage(connection_.requests(), sequence, 0, request, tail,
                                         connection_.MakeWaitOptions(absl::InfiniteDuration())));
  TALLY_ASSIGN_OR_RETURN(const ipc::ReceivedMessage message, AwaitResponse(sequence));
  absl::StatusOr<Answer<Response>> answer;
  if (message.header.type == ipc::CallError::kType) {
    absl::StatusOr<ipc::Decoded<ipc::CallError>> error = ipc::Decode<ipc::CallError>(message);
    answer = error.ok() ? CudaError(FromDriverResult(error->fields.result),
                                    std::string(reinterpret_cast<const char*>(error->tail.data()),
                                                error->tail.size()))
                        : error.status();
  } else if (absl::StatusOr<ipc::Decoded<Response>> decoded = ipc::Decode<Response>(message);
             decoded.ok()) {
    answer = Answer<Response>{decoded->fields, {decoded->tail.begin(), decoded->tail.end()}};
  } else {
    answer = decoded.status();
  }
  TALLY_RETURN_IF_ERROR(connection_.responses().Release());
  return answer;
}

template <typename Request>
absl::Status Channel::Post(const Request& request, std::span<const std::byte> tail) {
  static_assert(ipc::CallTraits<Request>::kMode == ipc::CallMode::kAsync);
  TALLY_RETURN_IF_ERROR(CheckSameProcess());
  std::lock_guard lock(mutex_);
  return ipc::PostMessage(connection_.requests(), next_sequence_++, ipc::kFlagOneWay, request, tail,
                          connection_.MakeWaitOptions(absl::InfiniteDuration()));
}

}  // namespace tally::client
