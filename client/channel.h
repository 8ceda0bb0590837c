// The shim's one connection to tally-server, made on first use: typed sync calls and one-way
// posts over the rings, plus the bulk area and the device snapshot. After fork() the child gets
// errors instead of sharing the parent's rings (a pthread_atfork handler marks the inherited
// channel: no getpid() system call per post).
//
// Many application threads may call at once. Posting is serialised by one mutex (the request
// ring has one producer). Receiving is leader/follower: the thread whose call is answered
// first is not necessarily the one reading the ring (the server answers calls that wait for the
// device from other threads, in any order), so whichever waiting thread holds the "receiver"
// role reads the next response; its own is decoded in place, another thread's is copied out and
// handed over. A single-threaded application never waits for another thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
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
  // Whether Get() has connected successfully (a lock-free check for the driver API).
  static bool Connected() { return connected_.load(std::memory_order_acquire); }

  // Sends a sync request and waits for its response; a CallError becomes a CudaError.
  template <typename Request>
  absl::StatusOr<Answer<typename ipc::CallTraits<Request>::Response>> Call(
      const Request& request, std::span<const std::byte> tail = {});
  // Sends a one-way request.
  template <typename Request>
  absl::Status Post(const Request& request, std::span<const std::byte> tail = {});

  // Starts (once) the thread that runs host functions when the server asks for them
  // (host_callbacks.cc).
  absl::Status EnableHostCallbacks();

  ipc::BulkAllocator& bulk() { return connection_.bulk(); }
  const ipc::GetDeviceInfoResponse& device() const { return device_; }
  // The host region (page-locked memory, same address in the server), or why it is unusable.
  absl::StatusOr<std::span<std::byte>> host_region() const { return connection_.host_region(); }
  // Maps host-region pages a second time, at `at` (ipc::Segment::MapHostRegionAlias).
  absl::Status MapHostRegionAlias(void* at, uint64_t address, size_t size, int prot) const {
    return connection_.MapHostRegionAlias(at, address, size, prot);
  }
  // Whether `pointer` lies in the host region: no lock, no system call (copy paths ask).
  bool InHostRegion(const void* pointer) const {
    return reinterpret_cast<uintptr_t>(pointer) - host_region_begin_ < host_region_size_;
  }

 private:
  explicit Channel(ipc::ClientConnection connection) : connection_(std::move(connection)) {}
  static absl::StatusOr<Channel*> Connect();
  // cudaErrorInitializationError in a child that inherited the channel through fork().
  static absl::Status CheckSameProcess() {
    if (!inherited_.load(std::memory_order_relaxed)) [[likely]]
      return absl::OkStatus();
    return InheritedError();
  }
  static absl::Status InheritedError();
  // Posts a request (one-way when `flags` has kFlagOneWay); returns its sequence number.
  template <typename Request>
  absl::StatusOr<uint64_t> Send(const Request& request, std::span<const std::byte> tail,
                                uint32_t flags);
  // Calls `consume` with the response to `sequence` once it has arrived.
  absl::Status Receive(uint64_t sequence,
                       absl::FunctionRef<absl::Status(const ipc::ReceivedMessage&)> consume);

  static inline std::atomic<bool> connected_{false};
  // Set in the child by the fork handler Connect() registers: the child shares the parent's
  // rings and must not use them. A child that forks before the first connection connects anew.
  static inline std::atomic<bool> inherited_{false};
  std::mutex post_mutex_;  // the request ring's single producer
  ipc::ClientConnection connection_;
  const ipc::WaitOptions wait_ = connection_.MakeWaitOptions(absl::InfiniteDuration());
  ipc::GetDeviceInfoResponse device_{};
  uintptr_t host_region_begin_ = 0;
  size_t host_region_size_ = 0;  // 0 when this process could not map the region
  uint64_t next_sequence_ = 1;   // under post_mutex_

  // Takes the device output a response flagged (ipc::kFlagDeviceOutput) and writes it to this
  // process's stdout and stderr, through stdio so that it follows what the program printed
  // before (as CUDA prints its printf buffer). A failure to take it loses only the text.
  void PrintDeviceOutput();

  // The callback thread's loop: runs what the callback ring asks, answers HostCallbackDone.
  void ServeHostCallbacks();
  std::once_flag host_callbacks_started_;
  absl::Status host_callbacks_status_;

  std::mutex receive_mutex_;
  std::condition_variable received_;  // a response was handed over, or the receiver left
  bool receiving_ = false;            // a thread reads the response ring
  // Responses read by another thread than their caller's, until it takes them.
  std::vector<std::pair<uint64_t, std::vector<std::byte>>> handed_over_;
};

template <typename Request>
absl::StatusOr<uint64_t> Channel::Send(const Request& request, std::span<const std::byte> tail,
                                       uint32_t flags) {
  TALLY_RETURN_IF_ERROR(CheckSameProcess());
  std::lock_guard lock(post_mutex_);
  const uint64_t sequence = next_sequence_++;
  TALLY_RETURN_IF_ERROR(
      ipc::PostMessage(connection_.requests(), sequence, flags, request, tail, wait_));
  return sequence;
}

template <typename Request>
absl::StatusOr<Answer<typename ipc::CallTraits<Request>::Response>> Channel::Call(
    const Request& request, std::span<const std::byte> tail) {
  using Response = typename ipc::CallTraits<Request>::Response;
  static_assert(ipc::CallTraits<Request>::kMode != ipc::CallMode::kAsync);
  TALLY_ASSIGN_OR_RETURN(const uint64_t sequence, Send(request, tail, 0));
  absl::StatusOr<Answer<Response>> answer;
  bool device_output = false;
  TALLY_RETURN_IF_ERROR(Receive(sequence, [&](const ipc::ReceivedMessage& message) {
    device_output = (message.header.flags & ipc::kFlagDeviceOutput) != 0;
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
    return absl::OkStatus();
  }));
  if (device_output) PrintDeviceOutput();
  return answer;
}

template <typename Request>
absl::Status Channel::Post(const Request& request, std::span<const std::byte> tail) {
  static_assert(ipc::CallTraits<Request>::kMode == ipc::CallMode::kAsync);
  return Send(request, tail, ipc::kFlagOneWay).status();
}

}  // namespace tally::client
