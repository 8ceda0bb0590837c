// A job on its own thread, joined when it ends in time and detached when it does not.
#include "server/bounded_wait.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace tally::server {

bool RunBounded(std::function<void()> job, std::chrono::steady_clock::time_point deadline) {
  if (deadline == std::chrono::steady_clock::time_point::max()) {
    job();
    return true;
  }
  // Shared with the thread, which may outlive this call.
  struct State {
    std::mutex mutex;
    std::condition_variable done_changed;
    bool done = false;
  };
  auto state = std::make_shared<State>();
  std::thread thread([state, job = std::move(job)] {
    job();
    std::lock_guard lock(state->mutex);
    state->done = true;
    state->done_changed.notify_all();
  });
  std::unique_lock lock(state->mutex);
  if (!state->done_changed.wait_until(lock, deadline, [&] { return state->done; })) {
    thread.detach();
    return false;
  }
  lock.unlock();
  thread.join();
  return true;
}

}  // namespace tally::server
