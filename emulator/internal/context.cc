// Context streams and the legacy default stream's implicit ordering.
#include "emulator/internal/context.h"

#include <algorithm>

#include "emulator/internal/limits.h"

namespace tally::emu {

Context::Context(uint64_t id, unsigned flags) : id_(id), flags_(flags) {}

Context::~Context() { Deactivate(); }

void Context::Activate() {
  std::lock_guard lock(mu_);
  if (active()) return;
  null_stream_ = std::make_shared<Stream>(weak_from_this(), id_, 0, 0);
  sticky_error_.store(CUDA_SUCCESS);
  for (auto& limit : limits_) limit.store(0);
  for (const LimitInfo& info : kLimits) limits_[info.limit].store(info.default_value);
  heap_fixed_.store(false);
  heap_.reset();
  active_.store(true, std::memory_order_release);
}

void Context::Deactivate() {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard lock(mu_);
    if (!active()) return;
    active_.store(false, std::memory_order_release);
    streams = std::move(streams_);
    streams.push_back(std::move(null_stream_));
    retired_.clear();
  }
  for (auto& stream : streams) stream->Shutdown();
}

std::shared_ptr<DeviceHeap> Context::heap(DeviceMemory& memory) {
  std::lock_guard lock(mu_);
  if (heap_ == nullptr) heap_ = std::make_shared<DeviceHeap>(memory, id_);
  return heap_;
}

std::shared_ptr<Stream> Context::CreateStream(unsigned flags, int priority) {
  auto stream = std::make_shared<Stream>(weak_from_this(), id_, flags, priority);
  std::lock_guard lock(mu_);
  ReapRetiredLocked();
  streams_.push_back(stream);
  return stream;
}

void Context::RetireStream(const std::shared_ptr<Stream>& stream) {
  std::lock_guard lock(mu_);
  retired_.push_back(stream);
  ReapRetiredLocked();
}

void Context::ReapRetiredLocked() {
  // A retired stream stays in streams_ until its work is done so that later NULL-stream work
  // still waits for it.
  std::erase_if(retired_, [&](const std::shared_ptr<Stream>& stream) {
    if (!stream->Reached(stream->last_enqueued())) return false;
    std::erase(streams_, stream);
    stream->Shutdown();
    return true;
  });
}

uint64_t Context::Enqueue(const std::shared_ptr<Stream>& stream, std::vector<StreamPoint> extra,
                          std::function<void()> work) {
  // Outside mu_: a full stream must not hold up the enqueues on other streams (which drain it).
  stream->WaitForRoom();
  std::lock_guard lock(mu_);
  ReapRetiredLocked();
  if (stream == null_stream_) {
    for (const auto& other : streams_) {
      if (!other->blocking()) continue;
      if (StreamPoint tail = other->Tail(other); tail.stream) extra.push_back(std::move(tail));
    }
  } else if (stream->blocking()) {
    if (StreamPoint tail = null_stream_->Tail(null_stream_); tail.stream) {
      extra.push_back(std::move(tail));
    }
  }
  return stream->Enqueue(std::move(extra), std::move(work));
}

void Context::Synchronize() {
  std::vector<StreamPoint> points;
  {
    std::lock_guard lock(mu_);
    if (!active()) return;
    for (const auto& stream : streams_) points.push_back({stream, stream->last_enqueued()});
    points.push_back({null_stream_, null_stream_->last_enqueued()});
  }
  for (const StreamPoint& point : points) point.stream->WaitFor(point.seq);
}

void Context::SetStickyError(CUresult error) {
  CUresult expected = CUDA_SUCCESS;
  sticky_error_.compare_exchange_strong(expected, error);
}

}  // namespace tally::emu
