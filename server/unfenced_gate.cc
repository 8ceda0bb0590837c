#include "server/unfenced_gate.h"

namespace tally::server {

bool UnfencedGate::AdmittedOtherThan(ClientId client) const {
  return admitted_.size() > (admitted_.contains(client) ? 1u : 0u);
}

bool UnfencedGate::HoldMemory(ClientId client) {
  std::unique_lock lock(mutex_);
  // A holder is never waited for: no other client can have been admitted since it held.
  if (holders_.contains(client)) return true;
  if (!ended_.wait_for(lock, wait_, [&] { return !AdmittedOtherThan(client); })) return false;
  holders_.insert(client);
  return true;
}

void UnfencedGate::ClientLeft(ClientId client) {
  {
    std::lock_guard lock(mutex_);
    holders_.erase(client);
    admitted_.erase(client);
  }
  ended_.notify_all();
}

bool UnfencedGate::TryAdmit(ClientId client) {
  std::lock_guard lock(mutex_);
  if (holders_.size() > (holders_.contains(client) ? 1u : 0u)) return false;
  ++admitted_[client];
  return true;
}

void UnfencedGate::Extend(ClientId client) {
  std::lock_guard lock(mutex_);
  if (const auto it = admitted_.find(client); it != admitted_.end()) ++it->second;
}

void UnfencedGate::End(ClientId client) {
  {
    std::lock_guard lock(mutex_);
    const auto it = admitted_.find(client);
    if (it == admitted_.end()) return;  // it left meanwhile
    if (--it->second > 0) return;
    admitted_.erase(it);
  }
  ended_.notify_all();
}

}  // namespace tally::server
