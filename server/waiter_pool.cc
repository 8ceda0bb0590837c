// A pool that grows while every thread is busy, up to its bound.
#include "server/waiter_pool.h"

#include <exception>
#include <utility>

#include "common/log.h"

namespace tally::server {

WaiterPool::WaiterPool(std::function<void()> thread_setup)
    : thread_setup_(std::move(thread_setup)) {}

WaiterPool::~WaiterPool() { Shutdown(std::chrono::steady_clock::time_point::max()); }

bool WaiterPool::Shutdown(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (joined_) return true;
  stopping_ = true;
  work_.notify_all();
  const auto all_out = [&] { return exited_ == threads_.size(); };
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    all_exited_.wait(lock, all_out);
  } else if (!all_exited_.wait_until(lock, deadline, all_out)) {
    return false;
  }
  joined_ = true;
  lock.unlock();
  for (std::thread& thread : threads_) thread.join();
  return true;
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
    if (jobs_.empty()) {  // stopping, and every job is done
      ++exited_;
      all_exited_.notify_all();
      return;
    }
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    try {
      job();
    } catch (const std::exception& e) {
      TALLY_LOG_ERROR("waiter thread: a wait failed with an exception: {}", e.what());
    } catch (...) {
      TALLY_LOG_ERROR("waiter thread: a wait failed with an exception");
    }
    lock.lock();
  }
}

}  // namespace tally::server
