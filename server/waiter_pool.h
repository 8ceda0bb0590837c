// The threads on which one client's blocking calls wait (cudaStreamSynchronize, cudaMemcpy, ...),
// so that its session thread keeps serving the client's other threads meanwhile. Threads are
// made on demand and then kept; more than kMaxThreads waits at once queue behind each other.
#pragma once

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
  // Waits for every job given so far, then joins the threads.
  ~WaiterPool();

  void Run(std::function<void()> job);

 private:
  void Loop();

  std::function<void()> thread_setup_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tally::server
