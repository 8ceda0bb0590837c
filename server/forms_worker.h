// The server's background worker for kernels' transformed forms: a bounded queue of jobs and a
// few threads that run them at a lower OS priority than the session and dispatch threads
// (setpriority on the thread: Linux's nice value is per thread), with the device context
// current, so that a launch never waits for a transformation on its client's thread and the
// dispatcher never on its own. A job that belongs to a module holds only a weak_ptr to it
// (SharedModule::RequestForms): a module unloaded while its job is queued is never touched, and
// one whose job runs stays loaded until the job ends.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tally::server {

class FormsWorker {
 public:
  // The nice value the worker's threads take (0 is the session and dispatch threads'): the
  // kernel's scheduler gives them the cores the serving threads leave.
  static constexpr int kNice = 10;

  // `thread_setup` runs on each thread before each job (making the device context current: it
  // may have been reset and replaced since the last one).
  FormsWorker(size_t threads, size_t capacity, std::function<void()> thread_setup);
  FormsWorker(const FormsWorker&) = delete;
  FormsWorker& operator=(const FormsWorker&) = delete;
  ~FormsWorker();  // Stop

  // Queues `job`; false when the queue holds `capacity` jobs already or the worker stopped (the
  // caller asks again later).
  bool Submit(std::function<void()> job);
  // Called after each job from the worker's thread (the dispatcher's wake-up); any thread, at
  // any time.
  void SetOnDone(std::function<void()> on_done);
  // Drops the queued jobs, waits for the running ones and joins the threads; Submit then says
  // no. Never from a job.
  void Stop();
  size_t queued();
  // Holds the queued jobs and waits for the running ones to end (a context reset: no job may use
  // the context meanwhile); Resume lets them go on. Never from a job.
  void Pause();
  void Resume();

 private:
  void Run(const std::function<void()>& thread_setup);

  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::function<void()>> jobs_;
  std::function<void()> on_done_;
  bool stopping_ = false;
  bool paused_ = false;
  size_t running_ = 0;
  std::condition_variable idle_;      // running_ fell to 0
  std::vector<std::thread> threads_;  // last: they start once everything above exists
};

}  // namespace tally::server
