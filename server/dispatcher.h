// Per-client ordered command queues and the one thread that issues their commands to the
// device in the order the scheduling policy picks. Order within a client is never changed;
// the policy only chooses which client's head command goes next.
#pragma once

#include <cuda.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/policy.h"

namespace tally::server {

// Issues one piece of stream-ordered work (a launch, copy, memset, event record) to the
// backend; returns what the driver returned.
using Command = std::function<CUresult()>;

// The first failure of a client's asynchronous work since its last synchronising call.
struct DeferredError {
  CUresult result = CUDA_SUCCESS;
  std::string what;  // the failed work ("kernel K<<<...>>>", "LaunchKernel: ..."); may be empty
};

class Dispatcher {
 public:
  struct ClientQueue;

  // `thread_setup` runs first on the dispatch thread (making the device context current).
  Dispatcher(std::unique_ptr<scheduler::Policy> policy, std::function<void()> thread_setup);
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;
  // Stops the thread; commands still queued are dropped (sessions are closed first).
  ~Dispatcher();

  std::shared_ptr<ClientQueue> AddClient(uint64_t client_id, int32_t priority);
  // Discards the client's queued commands and waits for one being issued to finish issuing;
  // WaitIssued on the queue returns from then on.
  void RemoveClient(ClientQueue& queue);

  void Enqueue(ClientQueue& queue, Command command);
  // Appends `commands` in their order under one lock and one wake-up (a session's one-way work,
  // session.h) and leaves `commands` empty, its capacity kept for the next batch.
  void Enqueue(ClientQueue& queue, std::vector<Command>& commands);
  // How many commands were ever enqueued for `queue`: WaitIssued(queue, Ticket(queue)) waits for
  // everything enqueued so far, and not for what other threads enqueue later.
  uint64_t Ticket(ClientQueue& queue);
  // Waits until the first `ticket` commands of `queue` have been issued to the backend (or the
  // client was removed).
  void WaitIssued(ClientQueue& queue, uint64_t ticket);
  // Whether WaitIssued(queue, ticket) would return at once.
  bool Issued(ClientQueue& queue, uint64_t ticket);
  // The first failure of an issued command since the last call (CUDA_SUCCESS when none): how
  // asynchronous errors reach the client's next synchronising call, as in CUDA.
  DeferredError TakeDeferredError(ClientQueue& queue);
  // Records the failure of work, named by `what`, for TakeDeferredError: from a command that
  // knows what it issued (before it returns the failure), or from work an issued command
  // started that ended later (a PTB run). The first failure is logged.
  void DeferError(ClientQueue& queue, CUresult result, std::string what);
  size_t queued(ClientQueue& queue);
  // The policy's form for a kernel launch; only from a command (on the dispatch thread).
  scheduler::LaunchForm ChooseForm(const scheduler::LaunchInfo& launch) {
    return policy_->ChooseForm(launch);
  }
  bool UsesTransformedForms() const { return policy_->UsesTransformedForms(); }

 private:
  void RecordFailure(ClientQueue& queue, CUresult result, std::string what);  // mutex_ held
  void Run(const std::function<void()>& thread_setup);

  std::unique_ptr<scheduler::Policy> policy_;
  std::mutex mutex_;
  std::condition_variable work_;    // dispatch thread: commands arrived or stopping
  std::condition_variable issued_;  // waiters: the command they wait for was issued
  std::vector<std::shared_ptr<ClientQueue>> queues_;
  uint64_t next_arrival_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace tally::server
