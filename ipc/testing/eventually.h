// Test helper: waits, bounded, for a condition that another thread makes true.
#pragma once

#include <chrono>
#include <thread>

namespace tally::ipc::testing {

// Whether `done` held before `limit` passed (checked every millisecond).
template <typename F>
bool Eventually(F done, std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace tally::ipc::testing
