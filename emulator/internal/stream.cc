// Stream worker: runs queued work in order once its cross-stream dependencies are met.
#include "emulator/internal/stream.h"

#include <cuda.h>

namespace tally::emu {
namespace {

thread_local Stream* current_stream = nullptr;  // set by WorkerLoop on its own thread

}  // namespace

Stream::Stream(std::weak_ptr<Context> owner, uint64_t context_id, unsigned flags, int priority)
    : owner_(std::move(owner)), context_id_(context_id), flags_(flags), priority_(priority) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

Stream::~Stream() { Shutdown(); }

void Stream::Shutdown() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

bool Stream::blocking() const { return (flags_ & CU_STREAM_NON_BLOCKING) == 0; }

Stream* Stream::Current() { return current_stream; }

void Stream::Cancel() {
  std::lock_guard lock(mu_);
  cancelled_.store(true, std::memory_order_release);
  if (running_abort_ != nullptr) running_abort_->store(true, std::memory_order_relaxed);
}

void Stream::WatchLaunch(std::atomic<bool>* abort) {
  std::lock_guard lock(mu_);
  running_abort_ = abort;
  if (abort != nullptr && cancelled()) abort->store(true, std::memory_order_relaxed);
}

uint64_t Stream::Enqueue(std::vector<StreamPoint> dependencies, std::function<void()> work) {
  uint64_t seq;
  {
    std::lock_guard lock(mu_);
    seq = ++enqueued_;
    queue_.push_back(Item{seq, std::move(dependencies), std::move(work)});
  }
  cv_.notify_all();
  return seq;
}

void Stream::WaitForRoom() const {
  if (std::this_thread::get_id() == worker_.get_id()) return;
  std::unique_lock lock(mu_);
  // The worker notifies cv_ whenever an item completes, so a full queue wakes us up.
  cv_.wait(lock, [&] { return queue_.size() < kMaxQueuedWork || stopping_; });
}

void Stream::WaitFor(uint64_t seq) const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return completed_ >= seq; });
}

bool Stream::Reached(uint64_t seq) const {
  std::lock_guard lock(mu_);
  return completed_ >= seq;
}

uint64_t Stream::last_enqueued() const {
  std::lock_guard lock(mu_);
  return enqueued_;
}

StreamPoint Stream::Tail(const std::shared_ptr<Stream>& self) const {
  std::lock_guard lock(mu_);
  if (completed_ >= enqueued_) return {};
  return {self, enqueued_};
}

void Stream::WorkerLoop() {
  current_stream = this;
  while (true) {
    Item item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything queued has run
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    for (const StreamPoint& point : item.dependencies) point.stream->WaitFor(point.seq);
    item.dependencies.clear();
    item.work();
    {
      std::lock_guard lock(mu_);
      completed_ = item.seq;
    }
    cv_.notify_all();
  }
}

}  // namespace tally::emu
