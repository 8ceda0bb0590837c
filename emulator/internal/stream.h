// A stream: an ordered queue of work executed by its own worker thread. Work may depend on
// points in other streams (legacy default-stream ordering, cuStreamWaitEvent); such
// dependencies always point at work enqueued earlier, so they cannot form a cycle.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tally::emu {

class Context;
class Stream;

// "Everything enqueued on `stream` up to and including its sequence number `seq` is done."
struct StreamPoint {
  std::shared_ptr<Stream> stream;
  uint64_t seq = 0;
};

// Work a stream holds at most (queued, not yet started). A GPU's push buffer is bounded too, and
// a full one blocks the launching thread; so does a full stream here, so that a program (or a
// server) that enqueues without end cannot grow the process's memory without end.
inline constexpr size_t kMaxQueuedWork = 4096;

class Stream {
 public:
  // `blocking` streams take part in the legacy default stream's implicit synchronisation
  // (everything but CU_STREAM_NON_BLOCKING ones).
  Stream(std::weak_ptr<Context> owner, uint64_t context_id, unsigned flags, int priority);
  ~Stream();  // Shutdown()
  // Finishes the queued work, then joins the worker (no more Enqueue afterwards).
  void Shutdown();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `work` to run after `dependencies` and after all earlier work of this stream;
  // returns its sequence number. Never blocks (see WaitForRoom).
  uint64_t Enqueue(std::vector<StreamPoint> dependencies, std::function<void()> work);
  // Blocks while kMaxQueuedWork items wait, unless called by the stream's own worker (work that
  // enqueues on its own stream would otherwise wait for itself). Called before Enqueue without
  // any lock held: several enqueuers may then overshoot the bound by one item each.
  void WaitForRoom() const;
  void WaitFor(uint64_t seq) const;
  bool Reached(uint64_t seq) const;
  uint64_t last_enqueued() const;
  // The point after everything enqueued so far; {nullptr, 0} when all of it is done already.
  StreamPoint Tail(const std::shared_ptr<Stream>& self) const;

  // Cancels the stream for good (tallyEmuStreamCancel): the launch running on it stops (its
  // blocks not yet started never run, running ones stop at their next time slice) and later
  // launches are skipped, without an error. Its other work (copies, event records, host
  // functions) still runs, so that everything waiting for the stream is released in order.
  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // The tenant whose work runs on this stream (tallyEmuStreamSetTenant; 0: none): its kernels
  // may touch only the tenant's memory, and a fault in them is the tenant's sticky error.
  uint64_t tenant() const { return tenant_.load(std::memory_order_acquire); }
  void set_tenant(uint64_t tenant) { tenant_.store(tenant, std::memory_order_release); }
  // Called by the work item of a launch on this stream's worker: `abort` is the flag Cancel
  // raises (set at once when the stream is already cancelled); nullptr once the launch is over.
  void WatchLaunch(std::atomic<bool>* abort);
  // The stream whose worker runs the calling thread's work item; null on other threads.
  static Stream* Current();

  const std::weak_ptr<Context>& owner() const { return owner_; }
  uint64_t context_id() const { return context_id_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }
  bool blocking() const;

 private:
  struct Item {
    uint64_t seq = 0;
    std::vector<StreamPoint> dependencies;
    std::function<void()> work;
  };
  void WorkerLoop();

  const std::weak_ptr<Context> owner_;
  const uint64_t context_id_;
  const unsigned flags_;
  const int priority_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // new work, completion, stop
  std::deque<Item> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool stopping_ = false;
  std::atomic<bool> cancelled_{false};
  std::atomic<uint64_t> tenant_{0};
  std::atomic<bool>* running_abort_ = nullptr;  // mu_; the running launch's (WatchLaunch)
  std::thread worker_;
};

}  // namespace tally::emu
