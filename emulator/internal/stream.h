// A stream: an ordered queue of work executed by its own worker thread. Work may depend on
// points in other streams (legacy default-stream ordering, cuStreamWaitEvent); such
// dependencies always point at work enqueued earlier, so they cannot form a cycle.
#pragma once

#include <condition_variable>
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
  // returns its sequence number.
  uint64_t Enqueue(std::vector<StreamPoint> dependencies, std::function<void()> work);
  void WaitFor(uint64_t seq) const;
  bool Reached(uint64_t seq) const;
  uint64_t last_enqueued() const;
  // The point after everything enqueued so far; {nullptr, 0} when all of it is done already.
  StreamPoint Tail(const std::shared_ptr<Stream>& self) const;

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
  std::thread worker_;
};

}  // namespace tally::emu
