// The Profiler: per-shape profiles behind one mutex.
#include "profiler/profiler.h"

#include <algorithm>

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
  return std::unique_ptr<Profiler>(new Profiler(std::move(options)));
}

internal::ShapeProfile& Profiler::ProfileOf(const KernelInfo& kernel) {
  auto [it, inserted] = profiles_.try_emplace(kernel.shape, kernel);
  if (!inserted) it->second.Update(kernel);
  return it->second;
}

FormChoice Profiler::Choose(const KernelInfo& kernel) {
  std::lock_guard lock(mutex_);
  return ProfileOf(kernel).Choose(options_.turnaround_threshold);
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
  profile.Record(measurement);
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

}  // namespace tally::profiler
