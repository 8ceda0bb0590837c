// The profiler without a cache: the probing sequence, the choice under the threshold and its
// fallback, the original form, normalisation, retries of unmeasured candidates, the estimates
// over recent samples, which runs are worth timing, and concurrent snapshots.
#include "profiler/profiler.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "profiler/candidates.h"
#include "profiler/testing/kernels.h"

namespace tally::profiler {
namespace {

using namespace testing;
using scheduler::FormChoice;

const LaunchForm kPtbFull = LaunchForm::Preemptible();
const LaunchForm kOriginal = LaunchForm::Original();

// 100 us threshold, no cache.
std::unique_ptr<Profiler> MakeProfiler() { return Profiler::Create({}); }

// 100 blocks: PTB full (32 workers), 24, 16, 8; sliced 4 (one wave each), 2.
const KernelInfo kKernel = Kernel(7, 100);
const std::vector<LaunchForm> kCandidates = {kPtbFull,
                                             LaunchForm::Preemptible(24),
                                             LaunchForm::Preemptible(16),
                                             LaunchForm::Preemptible(8),
                                             LaunchForm::Sliced(4),
                                             LaunchForm::Sliced(2)};

// FormChoice has no operator==; compared as a pair.
std::pair<LaunchForm, bool> Pair(const FormChoice& choice) {
  return {choice.form, choice.short_turnaround};
}

ProfileRecord Only(const Profiler& profiler) {
  const std::vector<ProfileRecord> records = profiler.Snapshot();
  REQUIRE(records.size() == 1);
  return records.front();
}

// Measures every candidate of kKernel: (time, turnaround) per candidate, in candidate order.
void MeasureAll(Profiler& profiler, const std::vector<std::pair<int, int>>& runs) {
  REQUIRE(runs.size() == kCandidates.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const FormChoice choice = profiler.Choose(kKernel);
    REQUIRE(choice.form == kCandidates[i]);
    profiler.Record(kKernel, "gemm", Run(choice.form, runs[i].first, runs[i].second));
  }
}

TEST_CASE("The test's kernel has the candidates the tests expect") {
  CHECK(Candidates(kKernel) == kCandidates);
}

TEST_CASE("Probing: PTB at full occupancy first, each candidate once, then the choice") {
  auto profiler = MakeProfiler();
  const FormChoice first = profiler->Choose(kKernel);
  CHECK(first.form == kPtbFull);
  CHECK(first.short_turnaround);
  profiler->Record(kKernel, "gemm", Run(first.form, 500, 50));
  for (size_t i = 1; i < kCandidates.size(); ++i) {
    CHECK(Only(*profiler).measured == i);
    CHECK_FALSE(Only(*profiler).complete);
    const FormChoice choice = profiler->Choose(kKernel);
    CHECK(choice.form == kCandidates[i]);
    CHECK(choice.short_turnaround);
    profiler->Record(kKernel, "gemm", Run(choice.form, 600 + static_cast<int>(i), 40));
  }
  CHECK(Only(*profiler).complete);
  // Every candidate qualifies; PTB at full occupancy is the fastest, from now on every time.
  for (int launch = 0; launch < 3; ++launch) {
    const FormChoice choice = profiler->Choose(kKernel);
    CHECK(choice.form == kPtbFull);
    CHECK(choice.short_turnaround);
  }
}

TEST_CASE("Launches that overlap each try a different candidate") {
  auto profiler = MakeProfiler();
  // Nothing is measured yet: six launches in flight at once, six different candidates.
  for (const LaunchForm& form : kCandidates) CHECK(profiler->Choose(kKernel).form == form);
}

TEST_CASE("The choice is the fastest candidate under the threshold") {
  auto profiler = MakeProfiler();
  // The fastest (PTB full, 24 workers) give the device back too late; of those under 100 us,
  // 16 workers is the fastest.
  MeasureAll(*profiler, {{400, 150}, {420, 120}, {450, 90}, {500, 60}, {480, 95}, {470, 300}});
  CHECK(profiler->Choose(kKernel).form == LaunchForm::Preemptible(16));
  const ProfileRecord record = Only(*profiler);
  CHECK(record.chosen == LaunchForm::Preemptible(16));
  CHECK(record.short_turnaround);
  CHECK(record.turnaround == Us(90));
  CHECK(record.kernel_name == "gemm");
}

TEST_CASE("Without a candidate under the threshold: the fastest near the smallest turnaround") {
  auto profiler = MakeProfiler();
  // The smallest turnaround is 180 us: 220, 200 and 190 us are within 1.25x of it, 250 us not.
  MeasureAll(*profiler, {{400, 250}, {420, 220}, {450, 200}, {500, 180}, {410, 190}, {405, 400}});
  const FormChoice choice = profiler->Choose(kKernel);
  CHECK(choice.form == LaunchForm::Sliced(4));
  // Transformed forms can always be preempted or stopped between slices.
  CHECK(choice.short_turnaround);
}

TEST_CASE("The original form competes once it is measured under the threshold") {
  auto profiler = MakeProfiler();
  MeasureAll(*profiler, {{100, 10}, {110, 10}, {120, 10}, {130, 10}, {105, 50}, {104, 90}});
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
  profiler->Record(kKernel, "gemm", OriginalRun(90));
  const FormChoice choice = profiler->Choose(kKernel);
  CHECK(choice.form == kOriginal);
  CHECK(choice.short_turnaround);
  CHECK(Only(*profiler).normalized_speed == 1.0);
}

TEST_CASE("A choice carries the original form's time alone once it is measured") {
  auto profiler = MakeProfiler();
  CHECK_FALSE(profiler->Choose(kKernel).original_time.has_value());
  profiler->Record(kKernel, "gemm", OriginalRun(300));
  CHECK(profiler->Choose(kKernel).original_time == std::chrono::microseconds(300));
}

TEST_CASE("Until the original is timed, the time alone is the fastest candidate's") {
  auto profiler = MakeProfiler();
  // A background kernel of a client that never runs alone: its original form is never timed.
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
  profiler->Record(kKernel, "gemm", Run(kPtbFull, 520, 50));
  CHECK(profiler->Choose(kKernel).original_time == Us(520));
  // The fastest of the candidates' fastest runs: a run slowed down beside other work moves
  // nothing, a faster run of another candidate lowers it.
  profiler->Record(kKernel, "gemm", Run(kPtbFull, 900, 50));
  CHECK(profiler->Choose(kKernel).original_time == Us(520));
  profiler->Record(kKernel, "gemm", Run(LaunchForm::Preemptible(16), 480, 50));
  CHECK(profiler->Choose(kKernel).original_time == Us(480));
  // A measured original replaces the estimate, also when it is slower.
  profiler->Record(kKernel, "gemm", OriginalRun(500));
  CHECK(profiler->Choose(kKernel).original_time == Us(500));
  // tally-ctl profiles lists only the measured original time.
  CHECK(Only(*profiler).original_time == Us(500));
}

TEST_CASE("A kernel without transformed forms has no time alone until its original is timed") {
  const KernelInfo plain = Kernel(9, 100, false, false);
  auto profiler = MakeProfiler();
  CHECK_FALSE(profiler->Choose(plain).original_time.has_value());
  profiler->Record(plain, "reduce", Run(kPtbFull, 400, 50));  // not a candidate: ignored
  CHECK_FALSE(profiler->Choose(plain).original_time.has_value());
}

TEST_CASE("A long original form is never chosen, even when it is the fastest") {
  auto profiler = MakeProfiler();
  profiler->Record(kKernel, "gemm", OriginalRun(300));
  MeasureAll(*profiler, {{400, 50}, {420, 50}, {450, 50}, {500, 50}, {480, 150}, {470, 300}});
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
  // Nor in the fallback: with every candidate over the threshold, only those near the smallest
  // turnaround (200 us) compete.
  auto other = MakeProfiler();
  other->Record(kKernel, "gemm", OriginalRun(150));
  MeasureAll(*other, {{400, 350}, {420, 300}, {450, 260}, {500, 200}, {480, 400}, {470, 500}});
  CHECK(other->Choose(kKernel).form == LaunchForm::Preemptible(8));
}

TEST_CASE("The first launch is never the original form, even one known to be short") {
  auto profiler = MakeProfiler();
  profiler->Record(kKernel, "gemm", OriginalRun(20));
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
}

TEST_CASE("A kernel without transformed forms: original, short only once measured so") {
  const KernelInfo plain = Kernel(9, 100, false, false);
  auto profiler = MakeProfiler();
  CHECK(Pair(profiler->Choose(plain)) == std::pair(kOriginal, false));
  CHECK_FALSE(Only(*profiler).complete);
  profiler->Record(plain, "reduce", OriginalRun(150));
  CHECK(Pair(profiler->Choose(plain)) == std::pair(kOriginal, false));
  CHECK(Only(*profiler).complete);
  // The turnaround is the median of the recent runs: two short runs of three make it short.
  profiler->Record(plain, "reduce", OriginalRun(60));
  CHECK(Pair(profiler->Choose(plain)) == std::pair(kOriginal, false));
  profiler->Record(plain, "reduce", OriginalRun(70));
  CHECK(Pair(profiler->Choose(plain)) == std::pair(kOriginal, true));
  const ProfileRecord record = Only(*profiler);
  CHECK(record.candidates == 0);
  CHECK(record.original_time == Us(60));
  CHECK(record.turnaround == Us(70));
  CHECK(record.normalized_speed == 1.0);
}

TEST_CASE("A kernel with a sliced form only starts with one wave per slice") {
  const KernelInfo sliced = Kernel(3, 100, true, false);
  auto profiler = MakeProfiler();
  CHECK(Pair(profiler->Choose(sliced)) == std::pair(LaunchForm::Sliced(4), true));
  CHECK(Pair(profiler->Choose(sliced)) == std::pair(LaunchForm::Sliced(2), true));
}

TEST_CASE("Speeds are normalised to the original time once it is known") {
  auto profiler = MakeProfiler();
  // Chosen: 16 workers (450 us); the fastest candidate (PTB full) takes 400 us.
  MeasureAll(*profiler, {{400, 150}, {420, 120}, {450, 90}, {500, 60}, {480, 95}, {470, 300}});
  ProfileRecord record = Only(*profiler);
  CHECK_FALSE(record.original_time.has_value());
  CHECK(record.normalized_speed == Approx(400.0 / 450.0));
  profiler->Record(kKernel, "gemm", OriginalRun(360));
  record = Only(*profiler);
  CHECK(record.original_time == Us(360));
  CHECK(record.normalized_speed == Approx(360.0 / 450.0));
}

TEST_CASE("Nothing is known before the first measurement") {
  auto profiler = MakeProfiler();
  profiler->Choose(kKernel);
  const ProfileRecord record = Only(*profiler);
  CHECK(record.kernel_name.empty());
  CHECK(record.chosen == kPtbFull);
  CHECK(record.candidates == kCandidates.size());
  CHECK(record.measured == 0);
  CHECK_FALSE(record.original_time.has_value());
  CHECK_FALSE(record.normalized_speed.has_value());
  CHECK_FALSE(record.turnaround.has_value());
}

TEST_CASE("A candidate whose runs were all preempted is tried again") {
  auto profiler = MakeProfiler();
  // The first launch (PTB full) is preempted: no measurement. The others are measured.
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
  for (size_t i = 1; i < kCandidates.size(); ++i) {
    const FormChoice choice = profiler->Choose(kKernel);
    CHECK(choice.form == kCandidates[i]);
    profiler->Record(kKernel, "gemm", Run(choice.form, 500, 50));
  }
  CHECK_FALSE(Only(*profiler).complete);
  // Tried again, as often as it takes.
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
  profiler->Record(kKernel, "gemm", Run(kPtbFull, 450, 50));
  CHECK(Only(*profiler).complete);
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
}

TEST_CASE("The least tried unmeasured candidate goes first") {
  auto profiler = MakeProfiler();
  // Two launches in flight, neither measured (both preempted).
  CHECK(profiler->Choose(kKernel).form == kCandidates[0]);
  CHECK(profiler->Choose(kKernel).form == kCandidates[1]);
  // The untried ones come before another try of those two.
  for (size_t i = 2; i < kCandidates.size(); ++i) {
    CHECK(profiler->Choose(kKernel).form == kCandidates[i]);
  }
  CHECK(profiler->Choose(kKernel).form == kCandidates[0]);
  CHECK(profiler->Choose(kKernel).form == kCandidates[1]);
}

TEST_CASE("PTB with the full-occupancy worker count counts as full occupancy") {
  auto profiler = MakeProfiler();
  CHECK(profiler->Choose(kKernel).form == kPtbFull);
  // The server may report the count it resolved workers 0 to (8 SMs x 4).
  profiler->Record(kKernel, "gemm", Run(LaunchForm::Preemptible(32), 500, 50));
  CHECK(Only(*profiler).measured == 1);
  CHECK(profiler->Choose(kKernel).form == kCandidates[1]);
}

TEST_CASE("Measurements of other forms and negative durations are ignored") {
  auto profiler = MakeProfiler();
  profiler->Record(kKernel, "gemm", Run(LaunchForm::Preemptible(7), 500, 50));
  profiler->Record(kKernel, "gemm", Run(LaunchForm::Sliced(3), 500, 50));
  profiler->Record(kKernel, "gemm", Run(kPtbFull, -1, 50));
  profiler->Record(kKernel, "gemm", Run(kPtbFull, 500, -1));
  CHECK(Only(*profiler).measured == 0);
  CHECK_FALSE(profiler->WantsMeasurement(kKernel, LaunchForm::Preemptible(7)));
}

TEST_CASE("Estimates: the fastest recent time, the upper median recent turnaround") {
  auto profiler = MakeProfiler();
  const KernelInfo ptb_only = Kernel(11, 8, false, true);  // one candidate: PTB full
  profiler->Choose(ptb_only);
  profiler->Record(ptb_only, "k", Run(kPtbFull, 100, 10));
  profiler->Record(ptb_only, "k", Run(kPtbFull, 300, 30));
  CHECK(Only(*profiler).turnaround == Us(30));  // of two, the larger
  profiler->Record(ptb_only, "k", Run(kPtbFull, 200, 20));
  CHECK(Only(*profiler).turnaround == Us(20));
  profiler->Record(ptb_only, "k", Run(kPtbFull, 250, 90));
  profiler->Record(ptb_only, "k", Run(kPtbFull, 260, 80));
  CHECK(Only(*profiler).turnaround == Us(30));  // 10 20 30 80 90
  profiler->Record(ptb_only, "k", OriginalRun(200));
  // The sixth run pushes out the first (100 us): the fastest kept is 200 us.
  profiler->Record(ptb_only, "k", Run(kPtbFull, 400, 95));
  const ProfileRecord record = Only(*profiler);
  CHECK(record.turnaround == Us(80));             // 20 30 80 90 95
  CHECK(record.normalized_speed == Approx(1.0));  // original 200 us / 200 us
}

TEST_CASE("Which runs are worth timing") {
  auto profiler = MakeProfiler();
  // A shape never seen: its original and its candidates, not other forms.
  CHECK(profiler->WantsMeasurement(kKernel, kOriginal));
  CHECK(profiler->WantsMeasurement(kKernel, kPtbFull));
  CHECK(profiler->WantsMeasurement(kKernel, LaunchForm::Sliced(2)));
  CHECK_FALSE(profiler->WantsMeasurement(kKernel, LaunchForm::Sliced(3)));
  // While profiling: every candidate, measured or not.
  profiler->Choose(kKernel);
  profiler->Record(kKernel, "gemm", Run(kPtbFull, 400, 50));
  CHECK(profiler->WantsMeasurement(kKernel, kPtbFull));
  CHECK(profiler->WantsMeasurement(kKernel, LaunchForm::Preemptible(8)));
  // Once profiled: only the chosen form, until it has three measurements.
  for (size_t i = 1; i < kCandidates.size(); ++i) {
    profiler->Record(kKernel, "gemm", Run(profiler->Choose(kKernel).form, 500, 50));
  }
  CHECK_FALSE(profiler->WantsMeasurement(kKernel, LaunchForm::Preemptible(8)));
  CHECK(profiler->WantsMeasurement(kKernel, kPtbFull));
  CHECK(profiler->WantsMeasurement(kKernel, LaunchForm::Preemptible(32)));  // the same form
  profiler->Record(kKernel, "gemm", Run(kPtbFull, 400, 50));
  profiler->Record(kKernel, "gemm", Run(kPtbFull, 400, 50));
  CHECK_FALSE(profiler->WantsMeasurement(kKernel, kPtbFull));
  // The original form, until it has three.
  for (int i = 0; i < 3; ++i) {
    CHECK(profiler->WantsMeasurement(kKernel, kOriginal));
    profiler->Record(kKernel, "gemm", OriginalRun(350));
  }
  CHECK_FALSE(profiler->WantsMeasurement(kKernel, kOriginal));
}

TEST_CASE("New occupancy for a shape: new candidates, measurements of the others kept") {
  auto profiler = MakeProfiler();
  MeasureAll(*profiler, {{400, 50}, {420, 50}, {450, 50}, {500, 50}, {480, 50}, {470, 50}});
  KernelInfo fewer = kKernel;
  fewer.resident_per_sm = 2;  // PTB full (16), 8; sliced 7, 3, 2
  const FormChoice choice = profiler->Choose(fewer);
  CHECK(choice.form == LaunchForm::Sliced(7));
  const ProfileRecord record = Only(*profiler);
  CHECK(record.candidates == 5);
  CHECK(record.measured == 3);  // PTB full, PTB 8, sliced 2
}

TEST_CASE("Snapshot lists every shape by name, and may run beside the dispatcher") {
  auto profiler = MakeProfiler();
  const KernelInfo b = Kernel(2, 64);
  const KernelInfo a = Kernel(1, 64);
  profiler->Record(b, "b_kernel", OriginalRun(10));
  profiler->Record(a, "a_kernel", OriginalRun(10));
  std::atomic<bool> done = false;
  std::atomic<int> short_snapshots = 0;  // Catch2's assertions are for the test's thread only
  std::thread reader([&] {
    while (!done) {
      if (profiler->Snapshot().size() < 2) ++short_snapshots;
    }
  });
  for (uint32_t i = 0; i < 2000; ++i) {
    const KernelInfo kernel = Kernel(100 + i % 50, 64);
    profiler->Record(kernel, "c_kernel", Run(profiler->Choose(kernel).form, 100, 10));
    profiler->WantsMeasurement(kernel, kOriginal);
  }
  done = true;
  reader.join();
  CHECK(short_snapshots == 0);
  const std::vector<ProfileRecord> records = profiler->Snapshot();
  REQUIRE(records.size() == 52);
  CHECK(records[0].kernel_name == "a_kernel");
  CHECK(records[1].kernel_name == "b_kernel");
  CHECK(records[2].shape.kernel == KernelId(100));
}

}  // namespace
}  // namespace tally::profiler
