// The sessions alive in a server, for reports about all clients (tally-ctl status).
#pragma once

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "common/client_priority.h"
#include "ipc/control.h"

namespace tally::server {

class Session;

class SessionRegistry {
 public:
  void Add(Session* session);
  // After this returns, no report reads `session` any more; its scheduling counters go into
  // Departed().
  void Remove(Session* session);
  // Sets the priority of the session of `client_id`; false when there is none.
  bool SetPriority(ClientId client_id, ClientPriority priority);
  // Sets the slowdown budget of the session of `client_id`; false when there is none.
  bool SetBudget(ClientId client_id, const SlowdownBudget& budget);
  // Sets the device-memory limit of the session of `client_id` and returns what it holds; none
  // when there is no such session.
  std::optional<uint64_t> SetMemoryLimit(ClientId client_id, uint64_t limit);
  // Session::Status of every live session, in the order they connected.
  std::vector<ipc::ClientStatus> Report();
  // The counters of the sessions removed so far, summed.
  ipc::DepartedStatus Departed();

 private:
  // Calls `change` on the session of `client_id` under the lock; false when there is none.
  bool Change(ClientId client_id, const std::function<void(Session&)>& change);

  std::mutex mutex_;
  std::vector<Session*> sessions_;
  ipc::DepartedStatus departed_{};
};

}  // namespace tally::server
