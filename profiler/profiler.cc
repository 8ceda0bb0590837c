// The Profiler: per-shape profiles behind one mutex, loaded from and saved to the cache file.
#include "profiler/profiler.h"

#include <algorithm>

#include "common/log.h"
#include "profiler/internal/atomic_file.h"
#include "profiler/internal/cache_file.h"

namespace tally::profiler {

using scheduler::FormChoice;
using scheduler::KernelInfo;
using scheduler::LaunchForm;

Duration PtbTurnaround(Duration time, uint64_t workers, uint64_t tasks) {
  if (workers == 0 || tasks == 0) return time;
  const uint64_t busy = std::min(workers, tasks);
  const uint64_t tasks_per_worker = (tasks + busy - 1) / busy;
  return time / static_cast<int64_t>(tasks_per_worker);
}

std::unique_ptr<Profiler> Profiler::Create(ProfilerOptions options) {
  std::unique_ptr<Profiler> profiler(new Profiler(std::move(options)));
  const std::string& path = profiler->options_.cache_path;
  if (path.empty()) return profiler;
  absl::StatusOr<std::string> text = internal::ReadWholeFile(path);
  absl::StatusOr<std::vector<internal::ShapeProfile>> loaded =
      text.ok() ? internal::DecodeCache(*text, profiler->options_.device) : text.status();
  if (!loaded.ok()) {
    if (!absl::IsNotFound(loaded.status())) {
      TALLY_LOG_WARN("profiler: ignoring the cache {}: {}; it will be replaced", path,
                     std::string(loaded.status().message()));
      profiler->dirty_ = true;
    }
    return profiler;
  }
  for (internal::ShapeProfile& profile : *loaded) {
    const scheduler::KernelShape shape = profile.info().shape;
    profiler->profiles_.emplace(shape, std::move(profile));
  }
  TALLY_LOG_DEBUG("profiler: {} launch configurations from {}", profiler->profiles_.size(), path);
  return profiler;
}

internal::ShapeProfile& Profiler::ProfileOf(const KernelInfo& kernel) {
  auto [it, inserted] = profiles_.try_emplace(kernel.shape, kernel);
  if (!inserted) it->second.Update(kernel);
  return it->second;
}

FormChoice Profiler::Choose(const KernelInfo& kernel) {
  std::lock_guard lock(mutex_);
  internal::ShapeProfile& profile = ProfileOf(kernel);
  FormChoice choice = profile.Choose(options_.turnaround_threshold);
  choice.original_time = profile.TimeAlone();
  return choice;
}

bool Profiler::WantsMeasurement(const KernelInfo& kernel, const LaunchForm& form) const {
  std::lock_guard lock(mutex_);
  auto it = profiles_.find(kernel.shape);
  if (it == profiles_.end()) {
    return internal::ShapeProfile(kernel).WantsMeasurement(form, options_.turnaround_threshold);
  }
  return it->second.WantsMeasurement(form, options_.turnaround_threshold);
}

void Profiler::Record(const KernelInfo& kernel, std::string_view kernel_name,
                      const Measurement& measurement) {
  std::lock_guard lock(mutex_);
  internal::ShapeProfile& profile = ProfileOf(kernel);
  if (!kernel_name.empty()) profile.set_name(kernel_name);
  if (profile.Record(measurement)) dirty_ = true;
}

std::vector<ProfileRecord> Profiler::Snapshot() const {
  std::vector<ProfileRecord> records;
  {
    std::lock_guard lock(mutex_);
    records.reserve(profiles_.size());
    for (const auto& [shape, profile] : profiles_) {
      records.push_back(profile.Describe(options_.turnaround_threshold));
    }
  }
  std::sort(records.begin(), records.end(), [](const ProfileRecord& a, const ProfileRecord& b) {
    if (a.kernel_name != b.kernel_name) return a.kernel_name < b.kernel_name;
    return internal::ShapeOrder(a.shape) < internal::ShapeOrder(b.shape);
  });
  return records;
}

absl::Status Profiler::Save() {
  if (options_.cache_path.empty()) return absl::OkStatus();
  std::lock_guard save_lock(save_mutex_);
  std::vector<internal::ShapeProfile> measured;
  {
    std::lock_guard lock(mutex_);
    if (!dirty_) return absl::OkStatus();
    for (const auto& [shape, profile] : profiles_) {
      if (profile.Measured()) measured.push_back(profile);
    }
    dirty_ = false;
  }
  const absl::Status status = internal::WriteFileAtomically(
      options_.cache_path, internal::EncodeCache(options_.device, measured));
  if (!status.ok()) {
    std::lock_guard lock(mutex_);
    dirty_ = true;
  }
  return status;
}

}  // namespace tally::profiler
