// One thread, one event, one wait at a time; the state the thread uses is shared with it so that
// a thread left waiting at shutdown touches nothing destroyed.
#include "server/run_end_watcher.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "common/log.h"

namespace tally::server {

// How long the destructor waits for a watched run (the runs' owner waited for them already).
constexpr auto kStopWait = std::chrono::seconds(1);

struct RunEndWatcher::Shared {
  Shared(const DriverApi& api, std::function<void()> thread_setup, std::function<void()> wake)
      : api(api), thread_setup(std::move(thread_setup)), wake(std::move(wake)) {}
  const DriverApi& api;
  std::function<void()> thread_setup;
  std::function<void()> wake;
  std::mutex mutex;
  std::condition_variable changed;  // armed or stopping set (thread), armed cleared (destructor)
  CUevent event = nullptr;          // made by the first Watch
  bool broken = false;              // the event could not be made: nothing is watched
  bool armed = false;               // the event is recorded and the thread waits (or will) on it
  bool stopping = false;
  std::thread thread;
};

RunEndWatcher::RunEndWatcher(const DriverApi& api, std::function<void()> thread_setup,
                             std::function<void()> wake)
    : shared_(std::make_shared<Shared>(api, std::move(thread_setup), std::move(wake))) {
  shared_->thread = std::thread([shared = shared_] { Loop(shared); });
}

RunEndWatcher::~RunEndWatcher() {
  std::unique_lock lock(shared_->mutex);
  shared_->stopping = true;
  shared_->changed.notify_all();
  if (!shared_->changed.wait_for(lock, kStopWait, [&] { return !shared_->armed; })) {
    TALLY_LOG_ERROR("tally-server: a watched kernel still runs at shutdown; its watcher is left");
    shared_->thread.detach();
    return;
  }
  lock.unlock();
  shared_->thread.join();
  if (shared_->event != nullptr) shared_->api.cuEventDestroy(shared_->event);
}

bool RunEndWatcher::Watch(CUstream stream) {
  Shared& shared = *shared_;
  std::lock_guard lock(shared.mutex);
  if (shared.armed || shared.broken) return false;
  if (shared.event == nullptr &&
      shared.api.cuEventCreate(&shared.event, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING) !=
          CUDA_SUCCESS) {
    shared.event = nullptr;
    shared.broken = true;
    return false;
  }
  if (shared.api.cuEventRecord(shared.event, stream) != CUDA_SUCCESS) return false;
  shared.armed = true;
  shared.changed.notify_all();
  return true;
}

void RunEndWatcher::Loop(const std::shared_ptr<Shared>& shared) {
  shared->thread_setup();
  std::unique_lock lock(shared->mutex);
  while (true) {
    shared->changed.wait(lock, [&] { return shared->armed || shared->stopping; });
    if (!shared->armed) return;  // stopping
    lock.unlock();
    // An error (a broken context) ends the wait as well: the dispatcher's poll finds why.
    shared->api.cuEventSynchronize(shared->event);
    lock.lock();
    shared->armed = false;
    shared->changed.notify_all();
    if (shared->stopping) return;
    lock.unlock();
    shared->wake();
    lock.lock();
  }
}

}  // namespace tally::server
