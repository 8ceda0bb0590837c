// The application's live streams (see streams.h).
#include "client/streams.h"

#include "absl/strings/str_format.h"
#include "client/handles.h"
#include "client/status.h"

namespace tally::client {

Streams& Streams::Get() {
  static Streams* const streams = new Streams;  // never destroyed, like the channel
  return *streams;
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
}

absl::StatusOr<StreamInfo> Streams::Find(cudaStream_t stream) {
  if (StreamHandle(stream) == 0) {
    return StreamInfo{
        .flags = 0, .priority = 0, .context = CurrentContext(), .id = kDefaultStreamId};
  }
  std::lock_guard lock(mutex_);
  auto it = live_.find(stream);
  if (it == live_.end()) {
    return DriverError(CUDA_ERROR_INVALID_HANDLE,
                       absl::StrFormat("no such stream: %p", static_cast<void*>(stream)));
  }
  return it->second;
}

}  // namespace tally::client
