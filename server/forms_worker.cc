// The background worker's threads: nice, then jobs (each with the context current) until stopped.
#include "server/forms_worker.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/exception_barrier.h"
#include "common/log.h"

namespace tally::server {

FormsWorker::FormsWorker(size_t threads, size_t capacity, std::function<void()> thread_setup)
    : capacity_(capacity) {
  for (size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this, thread_setup] { Run(thread_setup); });
  }
}

FormsWorker::~FormsWorker() { Stop(); }

bool FormsWorker::Submit(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
  }
  work_.notify_one();
  return true;
}

void FormsWorker::SetOnDone(std::function<void()> on_done) {
  std::lock_guard lock(mutex_);
  on_done_ = std::move(on_done);
}

void FormsWorker::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  work_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void FormsWorker::Pause() {
  std::unique_lock lock(mutex_);
  paused_ = true;
  idle_.wait(lock, [this] { return running_ == 0; });
}

void FormsWorker::Resume() {
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
  }
  work_.notify_all();
}

size_t FormsWorker::queued() {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

void FormsWorker::Run(const std::function<void()>& thread_setup) {
  // PRIO_PROCESS with a thread id sets that thread's nice value alone (setpriority(2), "BUGS":
  // threads do not share it on Linux).
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), kNice) != 0) {
    TALLY_LOG_WARN("forms worker: setpriority: {}: it runs at the serving threads' priority",
                   std::strerror(errno));
  }
  std::unique_lock lock(mutex_);
  while (true) {
    work_.wait(lock, [this] { return stopping_ || (!paused_ && !jobs_.empty()); });
    if (stopping_) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    ++running_;
    lock.unlock();
    thread_setup();
    const absl::Status done = CatchExceptions("forms worker", [&] {
      job();
      return absl::OkStatus();
    });
    if (!done.ok()) TALLY_LOG_ERROR("{}", done.ToString());
    job = nullptr;  // the module it held may be unloaded here, outside the lock
    lock.lock();
    if (--running_ == 0) idle_.notify_all();
    if (on_done_) {
      const std::function<void()> on_done = on_done_;
      lock.unlock();
      on_done();
      lock.lock();
    }
  }
}

}  // namespace tally::server
