// The dispatch loop. The policy is consulted with the lock held (it is pure and fast); the
// command is issued without it, so sessions keep enqueueing while the driver works.
#include "server/dispatcher.h"

#include <algorithm>
#include <string>
#include <utility>

#include "common/log.h"
#include "server/cuda_result.h"

namespace tally::server {

struct Dispatcher::ClientQueue {
  uint64_t client_id = 0;
  int32_t priority = 0;
  std::deque<std::pair<uint64_t, Command>> commands;  // (arrival, command)
  bool in_flight = false;
  uint64_t enqueued = 0;  // commands ever enqueued
  uint64_t issued = 0;    // commands issued to the backend (they are issued in order)
  bool removed = false;   // RemoveClient ran: the rest will never be issued
  // The smallest `issued` a WaitIssued waits for: the dispatch thread wakes waiters only then,
  // not after every command of a long queue.
  uint64_t wake_at = UINT64_MAX;
  DeferredError deferred_error;
};

Dispatcher::Dispatcher(std::unique_ptr<scheduler::Policy> policy,
                       std::function<void()> thread_setup)
    : policy_(std::move(policy)),
      thread_([this, setup = std::move(thread_setup)] { Run(setup); }) {}

Dispatcher::~Dispatcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
}

std::shared_ptr<Dispatcher::ClientQueue> Dispatcher::AddClient(uint64_t client_id,
                                                               int32_t priority) {
  auto queue = std::make_shared<ClientQueue>();
  queue->client_id = client_id;
  queue->priority = priority;
  std::lock_guard lock(mutex_);
  queues_.push_back(queue);
  return queue;
}

void Dispatcher::RemoveClient(ClientQueue& queue) {
  std::unique_lock lock(mutex_);
  queue.commands.clear();
  queue.removed = true;
  issued_.wait(lock, [&] { return !queue.in_flight; });
  std::erase_if(queues_, [&](const auto& q) { return q.get() == &queue; });
  issued_.notify_all();  // waiters for commands that were discarded
}

void Dispatcher::Enqueue(ClientQueue& queue, Command command) {
  {
    std::lock_guard lock(mutex_);
    if (queue.removed) return;
    queue.commands.emplace_back(next_arrival_++, std::move(command));
    ++queue.enqueued;
  }
  work_.notify_one();
}

void Dispatcher::Enqueue(ClientQueue& queue, std::vector<Command>& commands) {
  {
    std::lock_guard lock(mutex_);
    if (!queue.removed) {
      for (Command& command : commands) {
        queue.commands.emplace_back(next_arrival_++, std::move(command));
      }
      queue.enqueued += commands.size();
    }
  }
  commands.clear();
  work_.notify_one();
}

uint64_t Dispatcher::Ticket(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return queue.enqueued;
}

void Dispatcher::WaitIssued(ClientQueue& queue, uint64_t ticket) {
  std::unique_lock lock(mutex_);
  while (queue.issued < ticket && !queue.removed) {
    // Several may wait: each woken one that is not done yet sets its ticket again.
    queue.wake_at = std::min(queue.wake_at, ticket);
    issued_.wait(lock);
  }
}

bool Dispatcher::Issued(ClientQueue& queue, uint64_t ticket) {
  std::lock_guard lock(mutex_);
  return queue.issued >= ticket || queue.removed;
}

DeferredError Dispatcher::TakeDeferredError(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return std::exchange(queue.deferred_error, {});
}

void Dispatcher::DeferError(ClientQueue& queue, CUresult result, std::string what) {
  std::lock_guard lock(mutex_);
  RecordFailure(queue, result, std::move(what));
}

void Dispatcher::RecordFailure(ClientQueue& queue, CUresult result, std::string what) {
  if (queue.deferred_error.result != CUDA_SUCCESS) return;
  TALLY_LOG_WARN("client {}: {} failed with {} (reported at its next synchronising call)",
                 queue.client_id, what.empty() ? "asynchronous work" : what,
                 CuResultText(result));
  queue.deferred_error = {result, std::move(what)};
}

size_t Dispatcher::queued(ClientQueue& queue) {
  std::lock_guard lock(mutex_);
  return queue.commands.size();
}

void Dispatcher::Run(const std::function<void()>& thread_setup) {
  thread_setup();
  std::vector<scheduler::QueueHead> heads;
  std::vector<ClientQueue*> candidates;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    heads.clear();
    candidates.clear();
    for (const auto& queue : queues_) {
      if (queue->commands.empty()) continue;
      heads.push_back({queue->client_id, queue->priority, queue->commands.front().first,
                       queue->commands.size()});
      candidates.push_back(queue.get());
    }
    const std::optional<size_t> pick = heads.empty() ? std::nullopt : policy_->PickNext(heads);
    if (!pick || *pick >= candidates.size()) {
      work_.wait(lock);
      continue;
    }
    ClientQueue& queue = *candidates[*pick];
    Command command = std::move(queue.commands.front().second);
    queue.commands.pop_front();
    queue.in_flight = true;
    lock.unlock();
    const CUresult result = command();
    lock.lock();
    queue.in_flight = false;
    ++queue.issued;
    if (result != CUDA_SUCCESS) RecordFailure(queue, result, {});
    // RemoveClient waits for the command in flight.
    if (queue.issued >= queue.wake_at || queue.removed) {
      queue.wake_at = UINT64_MAX;
      issued_.notify_all();
    }
  }
}

}  // namespace tally::server
