// The application's live streams and each thread's per-thread default stream (see streams.h).
#include "client/streams.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_format.h"
#include "client/channel.h"
#include "client/handles.h"
#include "client/status.h"
#include "common/log.h"
#include "common/status.h"

namespace tally::client {
namespace {

constexpr uintptr_t kLegacyStream = 0x1;     // cudaStreamLegacy (driver_types.h)
constexpr uintptr_t kPerThreadStream = 0x2;  // cudaStreamPerThread

// The calling thread's per-thread default stream, of the streams' generation it was made in.
struct PerThreadStream {
  cudaStream_t stream = nullptr;
  uint64_t generation = 0;
  // Destroyed on the server with the thread, unless a reset destroyed it already. Errors (the
  // server gone, a forked child) are the application's no longer: ignored.
  ~PerThreadStream() {
    if (stream == nullptr) return;
    try {
      Streams::Get().DestroyIfCurrent(stream, generation).IgnoreError();
    } catch (...) {
      // Nothing may escape a thread's exit.
    }
  }
};

thread_local PerThreadStream per_thread_stream;
thread_local int per_thread_default_depth = 0;

bool IsPerThread(cudaStream_t stream) {
  const auto value = reinterpret_cast<uintptr_t>(stream);
  return value == kPerThreadStream || (value == 0 && PerThreadDefaultScope::Active());
}

}  // namespace

PerThreadDefaultScope::PerThreadDefaultScope() { ++per_thread_default_depth; }
PerThreadDefaultScope::~PerThreadDefaultScope() { --per_thread_default_depth; }
bool PerThreadDefaultScope::Active() { return per_thread_default_depth > 0; }

// A per-thread stream the server cannot create (its stream limit reached) leaves the thread on
// the legacy default stream, which orders strictly more than the per-thread stream would: the
// program stays correct, with less overlap, and is told once.
uint64_t StreamHandle(cudaStream_t stream) {
  if (IsPerThread(stream)) {
    absl::StatusOr<cudaStream_t> own = Streams::Get().PerThread();
    if (own.ok()) return reinterpret_cast<uintptr_t>(*own);
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      TALLY_LOG_WARN("tally: no per-thread default stream ({}); using the legacy default stream",
                     std::string(own.status().message()));
    }
    return 0;
  }
  const auto value = reinterpret_cast<uintptr_t>(stream);
  return value == kLegacyStream ? 0 : value;
}

Streams& Streams::Get() {
  static Streams* const streams = new Streams;  // never destroyed, like the channel
  return *streams;
}

absl::StatusOr<cudaStream_t> Streams::Create(unsigned int flags, StreamPriority requested) {
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  const StreamPriority priority = requested.ClampedTo(channel->device().stream_priority_least,
                                                      channel->device().stream_priority_greatest);
  TALLY_ASSIGN_OR_RETURN(auto answer, channel->Call(ipc::StreamCreateRequest{
                                          .flags = flags, .stream_priority = priority}));
  const cudaStream_t stream = ToStream(answer.fields.stream);
  StreamInfo info;
  info.flags = flags;
  info.priority = priority;
  info.context = CurrentContext();
  Add(stream, info);
  return stream;
}

absl::Status Streams::Destroy(cudaStream_t stream) {
  const auto handle = reinterpret_cast<uintptr_t>(stream);
  if (handle <= kPerThreadStream) {
    return DriverError(CUDA_ERROR_INVALID_HANDLE, "a default stream cannot be destroyed");
  }
  Remove(stream);
  TALLY_ASSIGN_OR_RETURN(Channel * channel, Channel::Get());
  return channel->Call(ipc::StreamDestroyRequest{.stream = handle}).status();
}

absl::Status Streams::DestroyIfCurrent(cudaStream_t stream, uint64_t generation) {
  if (generation != generation_.load(std::memory_order_acquire)) return absl::OkStatus();
  return Destroy(stream);
}

void Streams::Add(cudaStream_t stream, StreamInfo info) {
  std::lock_guard lock(mutex_);
  info.id = next_id_++;
  live_[stream] = info;
}

void Streams::Remove(cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  live_.erase(stream);
}

void Streams::Clear() {
  std::lock_guard lock(mutex_);
  live_.clear();
  legacy_ = LegacyStreamInfo();
  generation_.fetch_add(1, std::memory_order_release);
}

absl::StatusOr<cudaStream_t> Streams::PerThread() {
  PerThreadStream& own = per_thread_stream;
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (own.stream == nullptr || own.generation != generation) {
    // Not a non-blocking stream: it synchronises with the legacy default stream (CUDA Runtime
    // API, "Per-thread default stream").
    TALLY_ASSIGN_OR_RETURN(own.stream, Create(cudaStreamDefault, StreamPriority()));
    own.generation = generation;
  }
  return own.stream;
}

absl::StatusOr<StreamInfo*> Streams::Locate(cudaStream_t stream) {
  if (StreamHandle(stream) == 0) {
    legacy_.context = CurrentContext();
    return &legacy_;
  }
  auto it = live_.find(stream);
  if (it == live_.end()) {
    return DriverError(CUDA_ERROR_INVALID_HANDLE,
                       absl::StrFormat("no such stream: %p", static_cast<void*>(stream)));
  }
  return &it->second;
}

absl::StatusOr<StreamInfo> Streams::Find(cudaStream_t stream) {
  if (IsPerThread(stream)) {
    TALLY_ASSIGN_OR_RETURN(stream, PerThread());
  }
  std::lock_guard lock(mutex_);
  TALLY_ASSIGN_OR_RETURN(StreamInfo * info, Locate(stream));
  return *info;
}

absl::Status Streams::Update(cudaStream_t stream,
                             absl::FunctionRef<absl::Status(StreamInfo&)> change) {
  if (IsPerThread(stream)) {
    TALLY_ASSIGN_OR_RETURN(stream, PerThread());
  }
  std::lock_guard lock(mutex_);
  TALLY_ASSIGN_OR_RETURN(StreamInfo * info, Locate(stream));
  return change(*info);
}

}  // namespace tally::client
