// A pool that grows while every thread is busy, up to its bound.
#include "server/waiter_pool.h"

#include <utility>

namespace tally::server {

WaiterPool::WaiterPool(std::function<void()> thread_setup)
    : thread_setup_(std::move(thread_setup)) {}

WaiterPool::~WaiterPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void WaiterPool::Run(std::function<void()> job) {
  std::lock_guard lock(mutex_);
  jobs_.push_back(std::move(job));
  // Each idle thread takes one job; a job beyond them gets a new thread.
  if (jobs_.size() > idle_ && threads_.size() < kMaxThreads) {
    threads_.emplace_back([this] { Loop(); });
  } else {
    work_.notify_one();
  }
}

void WaiterPool::Loop() {
  thread_setup_();
  std::unique_lock lock(mutex_);
  while (true) {
    ++idle_;
    work_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
    --idle_;
    if (jobs_.empty()) return;  // stopping, and every job is done
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace tally::server
