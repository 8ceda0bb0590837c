// A CUDA stream's priority (cuStreamCreateWithPriority, cudaStreamGetPriority): lower numbers
// are more important, within the device's range (cuCtxGetStreamPriorityRange: greatest <= least).
// Not a ClientPriority, which orders Tally's clients and where higher levels win.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tally {

class StreamPriority {
 public:
  constexpr StreamPriority() = default;  // 0: the priority of streams created without one
  constexpr explicit StreamPriority(int32_t value) : value_(value) {}
  // The number CUDA takes and answers.
  constexpr int32_t value() const { return value_; }
  // Moved into the range [greatest, least], as cuStreamCreateWithPriority moves a request.
  constexpr StreamPriority ClampedTo(StreamPriority least, StreamPriority greatest) const {
    return StreamPriority(std::clamp(value_, greatest.value_, least.value_));
  }
  friend constexpr bool operator==(StreamPriority, StreamPriority) = default;

 private:
  int32_t value_ = 0;
};

}  // namespace tally
