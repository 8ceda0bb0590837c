// Connecting to the server (TALLY_SERVER, TALLY_PRIORITY, TALLY_MEMORY_LIMIT,
// TALLY_SLOWDOWN_BUDGET) and waiting for
// responses.
#include "client/channel.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "common/byte_size.h"
#include "common/log.h"
#include "common/slowdown_budget.h"
#include "ipc/socket_path.h"

namespace tally::client {
namespace {

// TALLY_PRIORITY: "high", "best-effort" or an integer; higher is more important. Unset when
// absent or empty.
absl::StatusOr<ClientPriority> PriorityFromEnvironment() {
  const char* value = std::getenv("TALLY_PRIORITY");
  absl::StatusOr<ClientPriority> priority = ClientPriority::Parse(value == nullptr ? "" : value);
  if (!priority.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TALLY_PRIORITY: %s", priority.status().message()));
  }
  return priority;
}

// TALLY_MEMORY_LIMIT (tally-run --memory-limit): bytes, or a size such as 512M; 0 when absent.
absl::StatusOr<uint64_t> MemoryLimitFromEnvironment() {
  const char* value = std::getenv("TALLY_MEMORY_LIMIT");
  if (value == nullptr || *value == '\0') return 0;
  absl::StatusOr<uint64_t> limit = ParseByteSize(value);
  if (!limit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TALLY_MEMORY_LIMIT: %s", limit.status().message()));
  }
  return limit;
}

// TALLY_SLOWDOWN_BUDGET (tally-run --slowdown-budget): "10%" or "10%@p95"; none when absent or
// empty (the server's default applies).
absl::StatusOr<std::optional<SlowdownBudget>> SlowdownBudgetFromEnvironment() {
  const char* value = std::getenv("TALLY_SLOWDOWN_BUDGET");
  if (value == nullptr || *value == '\0') return std::nullopt;
  absl::StatusOr<SlowdownBudget> budget = SlowdownBudget::Parse(value);
  if (!budget.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TALLY_SLOWDOWN_BUDGET: %s", budget.status().message()));
  }
  return *budget;
}

std::string CommandLine() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  std::string command((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  for (char& c : command) {
    if (c == '\0') c = ' ';
  }
  while (!command.empty() && command.back() == ' ') command.pop_back();
  return command;
}

}  // namespace

absl::StatusOr<Channel*> Channel::Get() {
  // Never destroyed: application threads may still call in while static destructors run.
  static const absl::StatusOr<Channel*>* const channel = new absl::StatusOr<Channel*>(Connect());
  // Also before the bulk area or the host region, which a forked child shares with its parent.
  TALLY_RETURN_IF_ERROR(CheckSameProcess());
  return *channel;
}

absl::StatusOr<Channel*> Channel::Connect() {
  ipc::ConnectOptions options;
  TALLY_ASSIGN_OR_RETURN(options.path, ipc::ResolveSocketPath(ipc::DirectoryMode::kCheckIfPresent));
  TALLY_ASSIGN_OR_RETURN(options.priority, PriorityFromEnvironment());
  TALLY_ASSIGN_OR_RETURN(options.memory_limit, MemoryLimitFromEnvironment());
  TALLY_ASSIGN_OR_RETURN(options.slowdown_budget, SlowdownBudgetFromEnvironment());
  TALLY_ASSIGN_OR_RETURN(options.trust, ipc::ServerTrust::FromEnvironment());
  options.schema_version = ipc::kCudaCallsSchemaVersion;
  options.command = CommandLine();
  options.on_wait = [](const std::string& reason) {
    std::fprintf(stderr, "tally: %s\n", reason.c_str());
  };
  // Registered once, before the connection exists: a child forked from then on would inherit
  // it. The handler runs in the child alone, before fork() returns there.
  if (const int error = pthread_atfork(nullptr, nullptr,
                                       [] { inherited_.store(true, std::memory_order_relaxed); });
      error != 0) {
    return absl::InternalError(absl::StrFormat("pthread_atfork: %s", std::strerror(error)));
  }
  // Its message already names the socket and says how to start or select a server.
  TALLY_ASSIGN_OR_RETURN(ipc::ClientConnection connection, ipc::ClientConnection::Connect(options));
  // Said once, as the job starts: e.g. its grant gave it less than its environment asked for.
  if (!connection.notice().empty()) TALLY_LOG_WARN("tally: {}", connection.notice());
  std::unique_ptr<Channel> channel(new Channel(std::move(connection)));
  TALLY_ASSIGN_OR_RETURN(auto device, channel->Call(ipc::GetDeviceInfoRequest{}));
  channel->device_ = device.fields;
  if (absl::StatusOr<std::span<std::byte>> region = channel->host_region(); region.ok()) {
    channel->host_region_begin_ = reinterpret_cast<uintptr_t>(region->data());
    channel->host_region_size_ = region->size();
  } else {
    // Said once: every page-locked allocation will fail with cudaErrorMemoryAllocation.
    TALLY_LOG_WARN("tally: no page-locked memory for this program: {}",
                   std::string(region.status().message()));
  }
  connected_.store(true, std::memory_order_release);
  return channel.release();
}

absl::Status Channel::InheritedError() {
  return CudaError(cudaErrorInitializationError,
                   "CUDA used in a child after fork(): the parent's connection cannot be shared");
}

void Channel::PrintDeviceOutput() {
  // Bounded: the server holds at most DeviceOutput::kMaxHeld bytes, taken 16 KiB at a time.
  for (int round = 0; round < 1024; ++round) {
    auto taken = Call(ipc::TakeDeviceOutputRequest{});
    if (!taken.ok()) return;
    const std::vector<std::byte>& tail = taken->tail;
    for (size_t at = 0; at + sizeof(ipc::DeviceOutputRecord) <= tail.size();) {
      ipc::DeviceOutputRecord record;
      std::memcpy(&record, tail.data() + at, sizeof(record));
      at += sizeof(record);
      const size_t size = std::min<size_t>(record.size, tail.size() - at);
      FILE* file = record.stream == 2 ? stderr : stdout;
      std::fwrite(tail.data() + at, 1, size, file);
      std::fflush(file);
      at += size;
    }
    if (taken->fields.more == 0) return;
  }
}

absl::Status Channel::Receive(
    uint64_t sequence, absl::FunctionRef<absl::Status(const ipc::ReceivedMessage&)> consume) {
  std::unique_lock lock(receive_mutex_);
  while (true) {
    auto mine = std::find_if(handed_over_.begin(), handed_over_.end(),
                             [&](const auto& entry) { return entry.first == sequence; });
    if (mine != handed_over_.end()) {
      const std::vector<std::byte> record = std::move(mine->second);
      handed_over_.erase(mine);
      lock.unlock();
      TALLY_ASSIGN_OR_RETURN(const ipc::ReceivedMessage message, ipc::ParseMessage(record));
      return consume(message);
    }
    if (receiving_) {
      received_.wait(lock);
      continue;
    }
    receiving_ = true;
    lock.unlock();
    // Kernels can run for long: the wait ends when the server answers or its socket closes.
    absl::StatusOr<std::span<const std::byte>> record = connection_.responses().Peek(wait_);
    absl::Status status = record.status();
    bool done = true;
    if (record.ok()) {
      absl::StatusOr<ipc::ReceivedMessage> message = ipc::ParseMessage(*record);
      if (!message.ok()) {
        status = absl::DataLossError(message.status().message());
      } else if (message->header.sequence == sequence) {
        status = consume(*message);
      } else {
        done = false;
        std::vector<std::byte> copy(record->begin(), record->end());
        lock.lock();
        handed_over_.emplace_back(message->header.sequence, std::move(copy));
        lock.unlock();
      }
      const absl::Status released = connection_.responses().Release();
      if (!released.ok()) {
        status = released;
        done = true;
      }
    }
    lock.lock();
    receiving_ = false;
    received_.notify_all();
    if (done) return status;
  }
}

}  // namespace tally::client
