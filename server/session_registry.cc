// Sessions register once created and leave at the end of their destructor.
#include "server/session_registry.h"

#include "server/session.h"

namespace tally::server {

void SessionRegistry::Add(Session* session) {
  std::lock_guard lock(mutex_);
  sessions_.push_back(session);
}

void SessionRegistry::Remove(Session* session) {
  std::lock_guard lock(mutex_);
  std::erase(sessions_, session);
}

bool SessionRegistry::SetPriority(uint64_t client_id, ClientPriority priority) {
  std::lock_guard lock(mutex_);
  for (Session* session : sessions_) {
    if (session->client().client_id == client_id) {
      session->SetPriority(priority);
      return true;
    }
  }
  return false;
}

std::optional<uint64_t> SessionRegistry::SetMemoryLimit(uint64_t client_id, uint64_t limit) {
  std::lock_guard lock(mutex_);
  for (Session* session : sessions_) {
    if (session->client().client_id == client_id) {
      session->set_memory_limit(limit);
      return session->allocations().total_bytes();
    }
  }
  return std::nullopt;
}

std::vector<ipc::ClientStatus> SessionRegistry::Report() {
  std::lock_guard lock(mutex_);
  std::vector<ipc::ClientStatus> report;
  report.reserve(sessions_.size());
  for (Session* session : sessions_) report.push_back(session->Status());
  return report;
}

}  // namespace tally::server
