// Per-launch-configuration profiling: estimates over recent samples, the probing order, and the
// choice under the turnaround threshold (docs/scheduling.md, "The profiler").
#include "profiler/internal/shape_profile.h"

#include <algorithm>
#include <array>
#include <chrono>

#include "profiler/candidates.h"

namespace tally::profiler::internal {

using scheduler::FormChoice;
using scheduler::FormKind;
using scheduler::KernelInfo;
using scheduler::LaunchForm;

void Samples::Add(Duration time, Duration turnaround) {
  if (times_.size() == kKeptSamples) {
    times_.erase(times_.begin());
    turnarounds_.erase(turnarounds_.begin());
  }
  times_.push_back(time);
  turnarounds_.push_back(turnaround);
}

Duration Samples::Time() const { return *std::min_element(times_.begin(), times_.end()); }

Duration Samples::Turnaround() const {
  std::array<Duration, kKeptSamples> sorted;
  std::copy(turnarounds_.begin(), turnarounds_.end(), sorted.begin());
  const auto end = sorted.begin() + static_cast<std::ptrdiff_t>(turnarounds_.size());
  const auto upper_median = sorted.begin() + static_cast<std::ptrdiff_t>(turnarounds_.size() / 2);
  std::nth_element(sorted.begin(), upper_median, end);
  return *upper_median;
}

ShapeProfile::ShapeProfile(const KernelInfo& info) : info_(info) {
  for (const LaunchForm& form : Candidates(info)) forms_.push_back({form, {}, 0});
}

void ShapeProfile::Update(const KernelInfo& info) {
  if (info.sliceable == info_.sliceable && info.preemptible == info_.preemptible &&
      info.resident_per_sm == info_.resident_per_sm && info.sm_count == info_.sm_count) {
    return;
  }
  info_ = info;
  std::vector<Form> previous = std::move(forms_);
  forms_.clear();
  for (const LaunchForm& form : Candidates(info)) {
    auto it = std::find_if(previous.begin(), previous.end(),
                           [&](const Form& old) { return old.form == form; });
    forms_.push_back(it != previous.end() ? std::move(*it) : Form{form, {}, 0});
  }
}

LaunchForm ShapeProfile::Canonical(LaunchForm form) const {
  const uint64_t full = FullOccupancyWorkers(info_);
  if (form.kind == FormKind::kPreemptible && full > 0 && form.workers >= full) {
    return LaunchForm::Preemptible();
  }
  return form;
}

std::optional<size_t> ShapeProfile::IndexOf(const LaunchForm& form) const {
  const LaunchForm canonical = Canonical(form);
  for (size_t i = 0; i < forms_.size(); ++i) {
    if (forms_[i].form == canonical) return i;
  }
  return std::nullopt;
}

bool ShapeProfile::OriginalShort(Duration threshold) const {
  return !original_.empty() && original_.Turnaround() < threshold;
}

bool ShapeProfile::Measured() const {
  return !original_.empty() || std::any_of(forms_.begin(), forms_.end(),
                                           [](const Form& form) { return !form.samples.empty(); });
}

bool ShapeProfile::Complete() const {
  if (forms_.empty()) return !original_.empty();
  return std::none_of(forms_.begin(), forms_.end(),
                      [](const Form& form) { return form.samples.empty(); });
}

std::optional<Duration> ShapeProfile::TimeAlone() const {
  if (!original_.empty()) return original_.Time();
  std::optional<Duration> fastest;
  for (const Form& form : forms_) {
    if (form.samples.empty()) continue;
    fastest = std::min(fastest.value_or(form.samples.Time()), form.samples.Time());
  }
  return fastest;
}

FormChoice ShapeProfile::Choose(Duration threshold) {
  Form* probe = nullptr;
  for (Form& form : forms_) {
    if (form.samples.empty() && (probe == nullptr || form.tries < probe->tries)) probe = &form;
  }
  if (probe == nullptr) return Current(threshold);
  ++probe->tries;
  return {probe->form, /*short_turnaround=*/true};
}

FormChoice ShapeProfile::Current(Duration threshold) const {
  if (forms_.empty()) return {LaunchForm::Original(), OriginalShort(threshold)};
  // The fastest that qualifies; the original form competes only when it qualifies.
  std::optional<FormChoice> fastest = FastestUnder(threshold, /*with_original=*/true);
  if (fastest) return *fastest;
  // None does: the threshold gives way to what the kernel allows, a little above the smallest
  // turnaround (candidates' turnarounds are often one original block each, nearly equal).
  const Form* steadiest = nullptr;
  for (const Form& form : forms_) {
    if (form.samples.empty()) continue;
    if (steadiest == nullptr || form.samples.Turnaround() < steadiest->samples.Turnaround()) {
      steadiest = &form;
    }
  }
  if (steadiest == nullptr) return {forms_.front().form, true};
  const auto relaxed = std::chrono::duration_cast<Duration>(steadiest->samples.Turnaround() *
                                                            kFallbackTurnaroundSlack);
  // The bound is exclusive: one nanosecond above keeps the steadiest itself in.
  return FastestUnder(relaxed + Duration(1), /*with_original=*/false).value();
}

std::optional<FormChoice> ShapeProfile::FastestUnder(Duration threshold, bool with_original) const {
  std::optional<FormChoice> fastest;
  Duration fastest_time{0};
  if (with_original && OriginalShort(threshold)) {
    fastest = FormChoice{LaunchForm::Original(), true};
    fastest_time = original_.Time();
  }
  for (const Form& form : forms_) {
    if (form.samples.empty()) continue;
    if (form.samples.Turnaround() < threshold && (!fastest || form.samples.Time() < fastest_time)) {
      fastest = FormChoice{form.form, true};
      fastest_time = form.samples.Time();
    }
  }
  return fastest;
}

bool ShapeProfile::WantsMeasurement(const LaunchForm& form, Duration threshold) const {
  if (form.kind == FormKind::kOriginal) return original_.size() < kWantedSamples;
  const std::optional<size_t> index = IndexOf(form);
  if (!index || forms_[*index].samples.size() >= kWantedSamples) return false;
  // Once the choice is made, only the chosen form's runs still sharpen what matters.
  return !Complete() || Current(threshold).form == forms_[*index].form;
}

bool ShapeProfile::Record(const Measurement& measurement) {
  if (measurement.time < Duration::zero() || measurement.turnaround < Duration::zero()) {
    return false;
  }
  if (measurement.form.kind == FormKind::kOriginal) {
    original_.Add(measurement.time, measurement.time);
    return true;
  }
  const std::optional<size_t> index = IndexOf(measurement.form);
  if (!index) return false;
  forms_[*index].samples.Add(measurement.time, measurement.turnaround);
  return true;
}

ProfileRecord ShapeProfile::Describe(Duration threshold) const {
  ProfileRecord record;
  record.shape = info_.shape;
  record.kernel_name = name_;
  if (!original_.empty()) record.original_time = original_.Time();
  const FormChoice choice = Current(threshold);
  record.chosen = choice.form;
  record.short_turnaround = choice.short_turnaround;
  record.candidates = static_cast<uint32_t>(forms_.size());
  record.measured = static_cast<uint32_t>(std::count_if(
      forms_.begin(), forms_.end(), [](const Form& form) { return !form.samples.empty(); }));
  record.complete = Complete();
  const Samples* chosen = choice.form.kind == FormKind::kOriginal ? &original_ : nullptr;
  if (const std::optional<size_t> index = IndexOf(choice.form)) chosen = &forms_[*index].samples;
  if (chosen == nullptr || chosen->empty()) return record;
  record.turnaround = chosen->Turnaround();
  const std::optional<Duration> base = TimeAlone();
  if (base && chosen->Time() > Duration::zero()) {
    record.normalized_speed =
        static_cast<double>(base->count()) / static_cast<double>(chosen->Time().count());
  }
  return record;
}

}  // namespace tally::profiler::internal
