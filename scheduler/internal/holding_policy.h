// The mechanism shared by the priority policies (docs/scheduling.md, "hold, shape, preempt"):
// clients of the highest connected level issue at once in their original form (below high, at
// most PriorityOptions::unshaped_in_flight kernels at a time; below always_shape_below, in
// BackgroundForm's form, one kernel at a time);
// a lower level's kernel waits until every higher level has been idle for min_idle, then runs
// in the form BackgroundForm gives; more important work preempts running PTB kernels and stops
// the issue of slices; copies and other work of any client go in queue order.
#pragma once

#include <algorithm>
#include <map>
#include <optional>

#include "scheduler/policy.h"

namespace tally::scheduler::internal {

class HoldingPolicy : public Policy {
 public:
  explicit HoldingPolicy(const PriorityOptions& options) : options_(options) {}

  void ClientJoined(Time now, ClientId client, ClientPriority priority, Decisions& out) override;
  void ClientLeft(Time now, ClientId client, Decisions& out) override;
  void PriorityChanged(Time now, ClientId client, ClientPriority priority,
                       Decisions& out) override;
  void HeadArrived(Time now, ClientId client, const Head& head, Decisions& out) override;
  void RunEnded(Time now, ClientId client, const RunEnd& end, Decisions& out) override;
  void Woken(Time now, Decisions& out) override;
  // A client below the top connected level (more important work exists), or one shaped even
  // alone (always_shape_below): its kernels would run in a transformed form. The top level's
  // run in their original form at once and never wait.
  bool WaitsForForms(ClientId client) const override;
  // A head announced while its client ran unshaped, whose forms were still to be made, is held
  // (not run unshaped) once the client is shaped, until this says they are made or given up.
  void HeadUpdated(Time now, ClientId client, const Head& head, Decisions& out) override;

 protected:
  // The form of a kernel launched while more important clients are connected.
  virtual FormChoice BackgroundForm(const KernelInfo& kernel) = 0;
  // How many PTB workers a background kernel of `kernel` may keep on the device while more
  // important work is queued or runs (or has been idle for less than min_idle); 0 holds it.
  virtual uint32_t BesideWorkers(const KernelInfo&) const { return 0; }
  // Whether a background kernel runs in its original form instead of `choice`'s, which may delay
  // more important work by up to its time alone: `beside` while that work is busy (or idle for
  // less than min_idle). At most unshaped_in_flight such originals of a client run at a time.
  virtual bool RunsOriginal(Time, const KernelInfo&, const FormChoice&, bool /*beside*/) {
    return false;
  }
  // Whether RunsOriginal may answer true beside more important work now.
  virtual bool MayRunOriginalBeside() const { return false; }
  // The blocks of the next slice of a background kernel run in slices sized to a budget
  // (LaunchForm::Slice): `time_alone` is the whole kernel's in its original form, `remaining` its
  // blocks not run yet; `beside` while more important work is busy (or idle for less than
  // min_idle). 0: no such slice now (beside, the kernel is held; otherwise it runs as it would
  // without this hook).
  virtual uint32_t SliceBlocks(Time, const KernelInfo&, Duration /*time_alone*/,
                               uint64_t /*remaining*/, bool /*beside*/) {
    return 0;
  }
  // A most-important client's kernel issued in its original form with its end reported (a less
  // important client is connected).
  virtual void ForegroundTracked(Time, ClientId, const KernelInfo&) {}
  // The end of a client's original-form kernel, reported before the decision it causes.
  virtual void OriginalEnded(Time, ClientId) {}
  // After each decision: whether work of a level below the top one is on the device.
  virtual void Decided(Time, bool /*lower_running*/) {}

 private:
  struct Client {
    int32_t level = 0;
    std::optional<Head> head;  // announced and not yet consumed
    bool started = false;      // the head kernel runs in a transformed form, not finished yet
    LaunchForm form;           // ... this one (its latest run's)
    LaunchForm full_form;      // ... the one it runs in without more important work beside it
    bool in_flight = false;    // a run (slice or PTB run) of it is on the device
    bool preempt_sent = false;
    uint32_t originals_running = 0;  // original-form kernels issued with notify, not ended
    uint64_t blocks_done = 0;        // of the started kernel, as its latest run's end says
    std::optional<Duration> time_alone;  // of the started kernel in its original form, if known
  };
  struct Level {
    bool busy = false;
    Time idle_since = Time::min();  // when it last became idle (long ago if never busy)
  };

  void Decide(Time now, Decisions& out);
  void IssueForeground(Time now, ClientId id, Client& client, bool notify, Decisions& out);
  void IssueBackground(Time now, ClientId id, Client& client, Decisions& out);
  // While more important work is not idle long enough: a kernel sized to the budget, or a PTB
  // kernel within BesideWorkers.
  void IssueBeside(Time now, ClientId id, Client& client, Decisions& out);
  // The next slice of the head sized by SliceBlocks (its first, if not started); false if none.
  bool IssueSizedSlice(Time now, ClientId id, Client& client, std::optional<Duration> time_alone,
                       bool beside, Decisions& out);
  // The head's first run in a transformed `form`.
  static void Start(Client& client, const LaunchForm& form, std::optional<Duration> time_alone);
  // A background kernel in its original form, its end reported.
  void IssueOriginal(ClientId id, Client& client, bool risky, Decisions& out);
  bool MayRunBeside(const Client& client) const;
  // The PTB workers `form` runs `kernel` with (0 in a form: as many as can be resident).
  static uint32_t WorkersOf(const LaunchForm& form, const KernelInfo& kernel);
  // A PTB kernel that runs narrower than its full form (started or resumed beside more important
  // work) is preempted once everything above it has been idle for min_idle, to resume at full
  // width.
  void WidenWhenIdle(Time now, Decisions& out);
  // Records which levels are busy, and when each busy level became idle.
  void UpdateLevels(Time now);
  // The blocks of the client's started kernel not run yet, as its latest run's end says.
  static uint64_t RemainingBlocks(const Client& client) {
    const uint64_t grid = client.head->kernel.shape.grid.Count();
    return grid - std::min(grid, client.blocks_done);
  }
  // The head is a kernel not started yet whose forms the driver has still to make.
  static bool AwaitsForms(const Client& client) {
    return !client.started && client.head && client.head->kind == Head::Kind::kKernel &&
           client.head->kernel.forms_pending;
  }
  static bool Busy(const Client& client) {
    return client.head.has_value() || client.in_flight || client.originals_running > 0;
  }
  bool BusyAbove(int32_t level) const;
  // The latest time at which a level above `level` became idle (`now` for one that was busy at
  // the start of this decision).
  Time IdleAboveSince(int32_t level, Time now) const;
  std::optional<int32_t> TopLevel() const;

  const PriorityOptions options_;
  std::map<ClientId, Client> clients_;  // ordered: decisions are deterministic
  std::map<int32_t, Level> levels_;
};

}  // namespace tally::scheduler::internal
