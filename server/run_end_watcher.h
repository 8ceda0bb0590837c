// Wakes the dispatcher the moment one run it waits for ends, so that a background kernel's next
// slice (or its next kernel) follows the last one on the device without the idle gap of a
// backed-off poll: the dispatcher's polls back off to its max_poll (200 us on NVIDIA's driver,
// 1 ms on the emulated GPU), which is as long as a slice sized to a small latency budget.
//
// One thread waits for one run at a time (cuEventSynchronize on an event of its own, created with
// CU_EVENT_BLOCKING_SYNC so that the thread sleeps instead of spinning); while it waits, the other
// runs' ends are found by the dispatcher's polls as before. Its event is recorded only while the
// thread does not wait on it, so that no record races the wait.
#pragma once

#include <cuda.h>

#include <functional>
#include <memory>

#include "server/backend/backend.h"

namespace tally::server {

class RunEndWatcher {
 public:
  // `thread_setup` runs first on the watching thread (making the device context current); `wake`
  // runs on it after each watched end.
  RunEndWatcher(const DriverApi& api, std::function<void()> thread_setup,
                std::function<void()> wake);
  RunEndWatcher(const RunEndWatcher&) = delete;
  RunEndWatcher& operator=(const RunEndWatcher&) = delete;
  // Waits a while for a watched run still on the device (a kernel that never ends at shutdown);
  // past that, the thread is left waiting, its event allocated, and `wake` is no longer called.
  ~RunEndWatcher();

  // Watches the work `stream` has queued so far. False when it cannot: an earlier run is still
  // watched, or the event could not be made or recorded (the context is broken).
  bool Watch(CUstream stream);

 private:
  struct Shared;  // what the thread uses: it outlives this object when its wait does not end
  static void Loop(const std::shared_ptr<Shared>& shared);

  std::shared_ptr<Shared> shared_;
};

}  // namespace tally::server
