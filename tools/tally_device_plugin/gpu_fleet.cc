// The node's GPUs as their servers report them (gpu_fleet.h).
#include "tools/tally_device_plugin/gpu_fleet.h"

#include <sys/stat.h>

#include <algorithm>

#include "common/client_priority.h"
#include "common/device_uuid.h"
#include "common/log.h"
#include "ipc/control.h"
#include "ipc/socket_path.h"

namespace tally::device_plugin {
namespace {

// How long one server may take to answer: a hung server must not stall the others' health.
constexpr absl::Duration kStatusTimeout = absl::Seconds(2);

std::optional<GpuState> AskServer(const std::string& socket, const ipc::ServerTrust& trust) {
  auto report = ipc::QueryStatus(socket, kStatusTimeout, trust);
  if (!report.ok()) {
    TALLY_LOG_DEBUG("tally-device-plugin: {}: {}", socket, std::string(report.status().message()));
    return std::nullopt;
  }
  GpuState gpu;
  gpu.uuid = FormatDeviceUuid(ipc::DeviceUuidOf(report->server));
  gpu.socket = socket;
  gpu.healthy = report->server.draining == 0;
  gpu.total_memory = report->server.total_memory;
  gpu.high_clients = static_cast<int>(
      std::count_if(report->clients.begin(), report->clients.end(), [](const auto& client) {
        return client.client_priority.level >= ClientPriority::kHighLevel;
      }));
  gpu.server_pid = report->server.server_pid;
  gpu.high_busy_ns = report->server.high_busy_ns;
  gpu.answered_at = std::chrono::steady_clock::now();
  struct stat info {};
  if (stat(socket.c_str(), &info) == 0) gpu.server_uid = info.st_uid;
  return gpu;
}

}  // namespace

double BusyFraction(const GpuState& before, const GpuState& now) {
  const std::chrono::duration<double, std::nano> interval = now.answered_at - before.answered_at;
  if (before.server_pid != now.server_pid || now.high_busy_ns < before.high_busy_ns ||
      interval.count() <= 0) {
    return 0.0;
  }
  const double busy = static_cast<double>(now.high_busy_ns - before.high_busy_ns);
  return std::clamp(busy / interval.count(), 0.0, 1.0);
}

GpuFleet::GpuFleet(std::string run_dir, ipc::ServerTrust trust, absl::Duration poll_interval)
    : run_dir_(std::move(run_dir)), trust_(std::move(trust)), poll_interval_(poll_interval) {}

GpuFleet::~GpuFleet() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuFleet::Start() {
  PollOnce();
  thread_ = std::thread([this] { Run(); });
}

void GpuFleet::Run() {
  std::unique_lock lock(mutex_);
  while (!changed_.wait_for(lock, absl::ToChronoNanoseconds(poll_interval_),
                            [this] { return stopping_; })) {
    lock.unlock();
    PollOnce();
    lock.lock();
  }
}

void GpuFleet::PollOnce() {
  std::map<std::string, GpuState> answered;
  for (const std::string& socket : ipc::ServerSockets(run_dir_)) {
    if (auto gpu = AskServer(socket, trust_)) answered[gpu->uuid] = *gpu;
  }
  std::lock_guard lock(mutex_);
  bool changed = false;
  for (auto& [uuid, gpu] : gpus_) {
    if (answered.contains(uuid) || !gpu.healthy) continue;
    TALLY_LOG_WARN("tally-device-plugin: the server of {} ({}) does not answer", uuid, gpu.socket);
    gpu.healthy = false;
    changed = true;
  }
  for (auto& [uuid, gpu] : answered) {
    const auto known = gpus_.find(uuid);
    if (known != gpus_.end()) gpu.high_busy_fraction = BusyFraction(known->second, gpu);
    if (known == gpus_.end() || known->second.healthy != gpu.healthy) {
      TALLY_LOG_INFO("tally-device-plugin: {} ({}) is {}", uuid, gpu.socket,
                     gpu.healthy ? "healthy" : "draining");
      changed = true;
    }
    gpus_[uuid] = gpu;
  }
  if (changed) {
    ++version_;
    changed_.notify_all();
  }
}

std::vector<GpuState> GpuFleet::Snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<GpuState> gpus;
  for (const auto& [uuid, gpu] : gpus_) gpus.push_back(gpu);
  return gpus;
}

std::optional<GpuState> GpuFleet::Find(const std::string& uuid) const {
  std::lock_guard lock(mutex_);
  const auto it = gpus_.find(uuid);
  if (it == gpus_.end()) return std::nullopt;
  return it->second;
}

uint64_t GpuFleet::version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

uint64_t GpuFleet::AwaitChange(uint64_t seen, absl::Duration timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                    [&] { return version_ != seen || stopping_; });
  return version_;
}

}  // namespace tally::device_plugin
