// Device calls the server cannot afford to wait for without end: freeing memory and unloading
// modules "may perform implicit synchronization" (CUDA Driver API, cuMemFree), that is, wait for
// every kernel of the shared context, including one of another client that never ends.
#pragma once

#include <chrono>
#include <functional>

namespace tally::server {

// Runs `job` on a thread of its own and waits for it until `deadline`. False when it had not
// finished then: the thread is left to finish (or block) on its own, so everything `job` uses
// must stay valid for good (the caller leaks it). A deadline of time_point::max() runs `job` on
// the calling thread.
bool RunBounded(std::function<void()> job, std::chrono::steady_clock::time_point deadline);

}  // namespace tally::server
