// The threads on which one client's blocking calls wait (cudaStreamSynchronize, cudaMemcpy, ...),
// so that its session thread keeps serving the client's other threads meanwhile. Threads are
// made on demand and then kept; more than kMaxThreads waits at once queue behind each other.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tally::server {

class WaiterPool {
 public:
  // A client has one outstanding blocking call per host thread; this bounds what a client that
  // pipelines blocking requests can make us create.
  static constexpr size_t kMaxThreads = 64;

  // `thread_setup` runs first on every thread (making the device context current).
  explicit WaiterPool(std::function<void()> thread_setup);
  WaiterPool(const WaiterPool&) = delete;
  WaiterPool& operator=(const WaiterPool&) = delete;
  // Shutdown without a deadline.
  ~WaiterPool();

  // A job that throws ends with a log line; the pool goes on (an exception barrier per job).
  void Run(std::function<void()> job);
  // Lets every job given so far finish and joins the threads, waiting until `deadline` at most.
  // False when jobs still run then (waits on a device that does not finish): the threads are
  // left running and the pool must not be destroyed (the caller leaks it).
  bool Shutdown(std::chrono::steady_clock::time_point deadline);

 private:
  void Loop();

  std::function<void()> thread_setup_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;
  size_t exited_ = 0;  // threads that left Loop
  std::condition_variable all_exited_;
  bool stopping_ = false;
  bool joined_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tally::server
