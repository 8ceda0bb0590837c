// Sessions register once created and leave when their teardown ends (Session::Close).
#include "server/session_registry.h"

#include "server/session.h"

namespace tally::server {

void SessionRegistry::Add(Session* session) {
  std::lock_guard lock(mutex_);
  sessions_.push_back(session);
}

void SessionRegistry::Remove(Session* session) {
  std::lock_guard lock(mutex_);
  if (std::erase(sessions_, session) == 0) return;
  const ipc::ClientStatus status = session->Status();
  ++departed_.clients;
  departed_.kernels_original += status.kernels_original;
  departed_.kernels_sliced += status.kernels_sliced;
  departed_.slices += status.slices;
  departed_.kernels_preemptible += status.kernels_preemptible;
  departed_.kernels_preempted += status.kernels_preempted;
  departed_.preemptions += status.preemptions;
  departed_.resumes += status.resumes;
  departed_.risky_launches += status.risky_launches;
  departed_.unfit_launches += status.unfit_launches;
  departed_.library_calls += status.library_calls;
  departed_.vendor_library_calls += status.vendor_library_calls;
  if (status.sticky_error != 0) ++departed_.faulted_clients;
}

ipc::DepartedStatus SessionRegistry::Departed() {
  std::lock_guard lock(mutex_);
  return departed_;
}

bool SessionRegistry::Change(ClientId client_id, const std::function<void(Session&)>& change) {
  std::lock_guard lock(mutex_);
  for (Session* session : sessions_) {
    if (session->client().client_id == client_id) {
      change(*session);
      return true;
    }
  }
  return false;
}

bool SessionRegistry::SetPriority(ClientId client_id, ClientPriority priority) {
  return Change(client_id, [&](Session& session) { session.SetPriority(priority); });
}

bool SessionRegistry::SetBudget(ClientId client_id, const SlowdownBudget& budget) {
  return Change(client_id, [&](Session& session) { session.SetBudget(budget); });
}

std::optional<uint64_t> SessionRegistry::SetMemoryLimit(ClientId client_id, uint64_t limit) {
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
