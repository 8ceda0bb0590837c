// The node's GPUs as their Tally servers report them: a thread asks every server socket in the
// run directory for its status every poll interval (each wait bounded) and keeps what it
// learnt, so that ListAndWatch can tell the kubelet when a GPU's health changes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "ipc/peer_access.h"

namespace tally::device_plugin {

struct GpuState {
  std::string uuid;    // as the server reports it
  std::string socket;  // its server's
  // Its server answered the last poll and is not draining. A GPU whose server left stays known,
  // unhealthy, so that its replicas are reported Unhealthy rather than vanishing.
  bool healthy = false;
  uint64_t total_memory = 0;  // bytes
  int high_clients = 0;       // connected at level high or above
  uid_t server_uid = 0;       // who runs the server (owns its socket)
  // The server's high-priority busy time (StatusReply::high_busy_ns) when it answered, and the
  // fraction of the time since its previous answer that it grew by (BusyFraction).
  int32_t server_pid = 0;
  uint64_t high_busy_ns = 0;
  std::chrono::steady_clock::time_point answered_at{};
  double high_busy_fraction = 0.0;
};

// The fraction of the time between two answers of a GPU's server that its high-priority work
// kept the device busy, 0 to 1; 0 when `before` is not an earlier answer of the same server
// (the first answer, or a server started anew).
double BusyFraction(const GpuState& before, const GpuState& now);

class GpuFleet {
 public:
  GpuFleet(std::string run_dir, ipc::ServerTrust trust, absl::Duration poll_interval);
  GpuFleet(const GpuFleet&) = delete;
  GpuFleet& operator=(const GpuFleet&) = delete;
  ~GpuFleet();  // stops polling

  // Polls once now, then every poll interval on a thread of its own.
  void Start();

  // The GPUs known, by UUID.
  std::vector<GpuState> Snapshot() const;
  std::optional<GpuState> Find(const std::string& uuid) const;
  // Counts changes of the GPUs known or of their health.
  uint64_t version() const;
  // Until version() differs from `seen` or `timeout` passed; the version then.
  uint64_t AwaitChange(uint64_t seen, absl::Duration timeout) const;

 private:
  void PollOnce();
  void Run();

  const std::string run_dir_;
  const ipc::ServerTrust trust_;
  const absl::Duration poll_interval_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::map<std::string, GpuState> gpus_;  // under mutex_
  uint64_t version_ = 0;                  // under mutex_
  bool stopping_ = false;                 // under mutex_
  std::thread thread_;
};

}  // namespace tally::device_plugin
