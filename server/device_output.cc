#include "server/device_output.h"

#include <algorithm>
#include <cstring>

#include "ipc/cuda_calls.h"

namespace tally::server {
namespace {

void AppendRecord(std::vector<std::byte>& out, uint32_t stream, const char* text, size_t size) {
  const ipc::DeviceOutputRecord record{stream, static_cast<uint32_t>(size)};
  const size_t at = out.size();
  out.resize(at + sizeof(record) + size);
  std::memcpy(out.data() + at, &record, sizeof(record));
  std::memcpy(out.data() + at + sizeof(record), text, size);
}

}  // namespace

bool DeviceOutput::Collect(PFN_tallyEmuTenantTakeOutput take, uint64_t tenant) {
  std::lock_guard lock(mu_);
  if (ring_ != nullptr) {
    ring_->Drain([this](uint32_t stream, std::string_view text) {
      // Beyond what a client that does not take its output may leave, text is dropped (as from
      // a full printf buffer).
      if (held_.size() < kMaxHeld) AppendRecord(held_, stream, text.data(), text.size());
    });
  }
  if (take != nullptr) {
    char buffer[4096];
    while (held_.size() < kMaxHeld) {
      int stream = 0;
      size_t size = 0;
      if (take(tenant, &stream, buffer, sizeof(buffer), &size) != CUDA_SUCCESS || size == 0) break;
      AppendRecord(held_, static_cast<uint32_t>(stream), buffer, size);
    }
  }
  return !held_.empty();
}

void DeviceOutput::Discard(PFN_tallyEmuTenantTakeOutput take, uint64_t tenant) {
  // Each Collect moves up to kMaxHeld bytes here; the device keeps at most as much for the
  // tenant, so this ends.
  while (Collect(take, tenant)) {
    std::lock_guard lock(mu_);
    held_.clear();
  }
  std::lock_guard lock(mu_);
  held_.shrink_to_fit();
}

absl::StatusOr<const DeviceOutputRing*> DeviceOutput::Ring(const DriverApi& api) {
  std::lock_guard lock(mu_);
  if (ring_ == nullptr) {
    absl::StatusOr<std::unique_ptr<DeviceOutputRing>> made = DeviceOutputRing::Create(api);
    if (!made.ok()) return made.status();
    ring_ = *std::move(made);
  }
  return ring_.get();
}

void DeviceOutput::ReleaseRing() {
  std::lock_guard lock(mu_);
  ring_.reset();
}

void DeviceOutput::AbandonRing() {
  std::lock_guard lock(mu_);
  // Deliberately never freed: the device may still write into it.
  static_cast<void>(ring_.release());
}

bool DeviceOutput::Take(std::vector<std::byte>& tail) {
  std::lock_guard lock(mu_);
  // Whole records, at least one (each holds at most 4 KiB of text, see Collect).
  size_t end = 0;
  while (end < held_.size()) {
    ipc::DeviceOutputRecord record;
    std::memcpy(&record, held_.data() + end, sizeof(record));
    const size_t next = end + sizeof(record) + record.size;
    if (end > 0 && next > kMaxTaken) break;
    end = next;
  }
  tail.insert(tail.end(), held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(end));
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(end));
  return !held_.empty();
}

}  // namespace tally::server
