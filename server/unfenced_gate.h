// tally-server --isolation fenced --unfenceable alone (docs/isolation.md): a kernel that cannot
// be fenced may read and write any address of the device, so it runs only while no other client
// holds memory it could reach, and no other client gets such memory until it has ended. Sessions
// mark their clients here before they acquire memory (device allocations, page-locked blocks,
// module variables); the dispatch thread admits a client's unfenced kernels and ends them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/strong_id.h"

namespace tally::server {

class UnfencedGate {
 public:
  // `wait`: how long HoldMemory waits for other clients' unfenced kernels to end.
  explicit UnfencedGate(std::chrono::milliseconds wait) : wait_(wait) {}
  UnfencedGate(const UnfencedGate&) = delete;
  UnfencedGate& operator=(const UnfencedGate&) = delete;

  // Before the client acquires memory a kernel could reach: the client holds memory from now on
  // (until ClientLeft; freeing it all does not count, which errs on the safe side). While
  // another client is admitted, waits for its unfenced kernels to end, at most `wait`; false
  // then, and the client holds nothing new.
  [[nodiscard]] bool HoldMemory(ClientId client);
  // The client is gone and its memory freed: it holds none and is admitted no more.
  void ClientLeft(ClientId client);

  // Dispatch thread: admits one unfenced kernel run of `client` if no other client holds
  // memory (true), until a matching End. Admissions of one client nest.
  [[nodiscard]] bool TryAdmit(ClientId client);
  // One more admission of an admitted client (a run of its admitted kernel on the device).
  void Extend(ClientId client);
  void End(ClientId client);

  std::chrono::milliseconds wait() const { return wait_; }

 private:
  bool AdmittedOtherThan(ClientId client) const;  // mutex_ held

  const std::chrono::milliseconds wait_;
  std::mutex mutex_;
  std::condition_variable ended_;  // an admission ended
  absl::flat_hash_set<ClientId> holders_;
  absl::flat_hash_map<ClientId, int> admitted_;  // open admissions per client, none at 0
};

}  // namespace tally::server
