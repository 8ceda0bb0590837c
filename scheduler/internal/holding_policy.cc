// Decisions of the holding policies. Every event updates the clients' state and then decides
// afresh; the number of clients is small, so each decision looks at all of them.
#include "scheduler/internal/holding_policy.h"

#include <algorithm>

namespace tally::scheduler::internal {

void HoldingPolicy::ClientJoined(Time now, ClientId client, ClientPriority priority,
                                 Decisions& out) {
  clients_[client].level = priority.level();
  Decide(now, out);
}

void HoldingPolicy::ClientLeft(Time now, ClientId client, Decisions& out) {
  clients_.erase(client);
  Decide(now, out);
}

void HoldingPolicy::PriorityChanged(Time now, ClientId client, ClientPriority priority,
                                    Decisions& out) {
  auto it = clients_.find(client);
  if (it != clients_.end()) it->second.level = priority.level();
  Decide(now, out);
}

void HoldingPolicy::HeadArrived(Time now, ClientId client, const Head& head, Decisions& out) {
  auto it = clients_.find(client);
  if (it != clients_.end()) it->second.head = head;
  Decide(now, out);
}

void HoldingPolicy::HeadUpdated(Time now, ClientId client, const Head& head, Decisions& out) {
  auto it = clients_.find(client);
  if (it != clients_.end() && AwaitsForms(it->second)) it->second.head = head;
  Decide(now, out);
}

void HoldingPolicy::RunEnded(Time now, ClientId id, const RunEnd& end, Decisions& out) {
  auto it = clients_.find(id);
  if (it != clients_.end()) {
    Client& client = it->second;
    if (end.form == FormKind::kOriginal) {
      if (client.originals_running > 0) --client.originals_running;
      OriginalEnded(now, id);
    } else {
      client.in_flight = false;
      client.preempt_sent = false;
      client.blocks_done = end.blocks_done;
      if (end.finished) {
        client.started = false;
        client.head.reset();
      }
    }
  }
  Decide(now, out);
}

void HoldingPolicy::Woken(Time now, Decisions& out) { Decide(now, out); }

bool HoldingPolicy::WaitsForForms(ClientId id) const {
  auto it = clients_.find(id);
  if (it == clients_.end() || !UsesTransformedForms()) return false;
  const int32_t level = it->second.level;
  return level < TopLevel().value_or(level) || level < options_.always_shape_below;
}

std::optional<int32_t> HoldingPolicy::TopLevel() const {
  std::optional<int32_t> top;
  for (const auto& [id, client] : clients_) top = std::max(top.value_or(client.level), client.level);
  return top;
}

bool HoldingPolicy::BusyAbove(int32_t level) const {
  return std::any_of(clients_.begin(), clients_.end(), [&](const auto& entry) {
    return entry.second.level > level && Busy(entry.second);
  });
}

Time HoldingPolicy::IdleAboveSince(int32_t level, Time now) const {
  Time since = Time::min();
  for (auto it = levels_.upper_bound(level); it != levels_.end(); ++it) {
    since = std::max(since, it->second.busy ? now : it->second.idle_since);
  }
  return since;
}

void HoldingPolicy::UpdateLevels(Time now) {
  std::map<int32_t, bool> busy;
  for (const auto& [id, client] : clients_) busy[client.level] |= Busy(client);
  std::erase_if(levels_, [&](const auto& entry) { return !busy.contains(entry.first); });
  for (const auto& [level, is_busy] : busy) {
    Level& state = levels_[level];
    if (state.busy && !is_busy) state.idle_since = now;
    state.busy = is_busy;
  }
}

void HoldingPolicy::Decide(Time now, Decisions& out) {
  UpdateLevels(now);
  const std::optional<int32_t> top = TopLevel();
  if (!top) return;
  // More important work waits or runs: running PTB kernels below it give their SMs back, unless
  // they are narrow enough to stay beside it.
  for (auto& [id, client] : clients_) {
    if (client.in_flight && client.form.kind == FormKind::kPreemptible && !client.preempt_sent &&
        BusyAbove(client.level) && !MayRunBeside(client)) {
      out.Preempt(id);
      client.preempt_sent = true;
    }
  }
  WidenWhenIdle(now, out);
  const bool lower_exists = std::any_of(clients_.begin(), clients_.end(),
                                        [&](const auto& entry) { return entry.second.level < *top; });
  for (auto& [id, client] : clients_) {
    if (client.level == *top) IssueForeground(now, id, client, lower_exists, out);
  }
  for (auto& [id, client] : clients_) {
    if (client.level < *top) IssueBackground(now, id, client, out);
  }
  UpdateLevels(now);
  Decided(now, std::any_of(clients_.begin(), clients_.end(), [&](const auto& entry) {
            return entry.second.level < *top &&
                   (entry.second.in_flight || entry.second.originals_running > 0);
          }));
}

void HoldingPolicy::WidenWhenIdle(Time now, Decisions& out) {
  for (auto& [id, client] : clients_) {
    if (!client.in_flight || client.preempt_sent || client.form == client.full_form ||
        client.form.kind != FormKind::kPreemptible || BusyAbove(client.level)) {
      continue;
    }
    const Time idle_since = IdleAboveSince(client.level, now);
    if (now < idle_since + options_.min_idle) {
      out.WakeAt(idle_since + options_.min_idle);
      continue;
    }
    out.Preempt(id);  // resumed at full width (IssueBackground)
    client.preempt_sent = true;
  }
}

uint32_t HoldingPolicy::WorkersOf(const LaunchForm& form, const KernelInfo& kernel) {
  return form.workers > 0 ? form.workers : kernel.resident_per_sm * kernel.sm_count;
}

bool HoldingPolicy::MayRunBeside(const Client& client) const {
  if (!client.head || client.form.kind != FormKind::kPreemptible) return false;
  const uint32_t workers = WorkersOf(client.form, client.head->kernel);
  return workers > 0 && workers <= BesideWorkers(client.head->kernel);
}

void HoldingPolicy::IssueForeground(Time now, ClientId id, Client& client, bool notify,
                                    Decisions& out) {
  if (!client.head) return;
  if (client.started) {
    // Became the most important while a transformed run was under way: it goes on unheld, a
    // kernel in slices sized to a budget in one slice of the rest (no one is left to wait for
    // it), unless the client is shaped even alone.
    if (!client.in_flight) {
      client.form = client.full_form;
      if (client.form.sized_slice() && client.level >= options_.always_shape_below) {
        client.form = LaunchForm::Slice(
            static_cast<uint32_t>(std::min<uint64_t>(RemainingBlocks(client), UINT32_MAX)));
      }
      out.Issue(id, client.form, false, /*foreground=*/true);
      client.in_flight = true;
    }
    return;
  }
  const bool kernel = client.head->kind == Head::Kind::kKernel;
  // A best-effort client on top: at most unshaped_in_flight of its kernels on the device.
  const bool bounded = kernel && client.level < ClientPriority::kHighLevel;
  if (bounded && client.originals_running >= options_.unshaped_in_flight) return;
  if (kernel && client.level < options_.always_shape_below) {
    if (AwaitsForms(client)) return;
    const FormChoice choice = BackgroundForm(client.head->kernel);
    if (choice.form.kind != FormKind::kOriginal) {
      out.Issue(id, choice.form, false, /*foreground=*/true);
      client.started = true;
      client.form = client.full_form = choice.form;
      client.in_flight = true;
      return;
    }
  }
  const bool tracked = kernel && (notify || bounded);
  out.Issue(id, LaunchForm::Original(), tracked, /*foreground=*/true);
  if (tracked) ++client.originals_running;
  if (kernel && notify) ForegroundTracked(now, id, client.head->kernel);
  client.head.reset();
}

void HoldingPolicy::IssueBackground(Time now, ClientId id, Client& client, Decisions& out) {
  if (!client.head || client.in_flight) return;
  if (client.head->kind == Head::Kind::kOther) {
    // Only kernels are shaped: copies, memsets and host functions go in queue order.
    out.Issue(id);
    client.head.reset();
    return;
  }
  if (AwaitsForms(client)) return;  // HeadUpdated decides again
  if (BusyAbove(client.level)) {  // its arrival or end decides again
    IssueBeside(now, id, client, out);
    return;
  }
  const Time idle_since = IdleAboveSince(client.level, now);
  // Sums, not differences: idle_since may be Time::min() (never busy).
  if (now < idle_since + options_.min_idle) {
    out.WakeAt(idle_since + options_.min_idle);
    IssueBeside(now, id, client, out);
    return;
  }
  if (client.started) {
    if (client.form.sized_slice() &&
        IssueSizedSlice(now, id, client, client.time_alone, /*beside=*/false, out)) {
      return;
    }
    // The next slice, or the resumption: at full width again if it was started narrow.
    client.form = client.full_form;
    out.Issue(id, client.form);
    client.in_flight = true;
    return;
  }
  const FormChoice choice = BackgroundForm(client.head->kernel);
  if (choice.form.kind != FormKind::kOriginal &&
      RunsOriginal(now, client.head->kernel, choice, /*beside=*/false)) {
    if (client.originals_running < options_.unshaped_in_flight) {
      IssueOriginal(id, client, /*risky=*/false, out);
    }
    return;
  }
  if (choice.form.kind != FormKind::kOriginal &&
      IssueSizedSlice(now, id, client, choice.original_time, /*beside=*/false, out)) {
    return;
  }
  if (choice.form.kind == FormKind::kOriginal) {
    const bool risky = !choice.short_turnaround;
    if (risky && now < idle_since + options_.long_idle) {
      out.WakeAt(idle_since + options_.long_idle);
      return;
    }
    IssueOriginal(id, client, risky, out);
    return;
  }
  out.Issue(id, choice.form);
  Start(client, choice.form, choice.original_time);
}

void HoldingPolicy::Start(Client& client, const LaunchForm& form,
                          std::optional<Duration> time_alone) {
  client.started = true;
  client.form = client.full_form = form;
  client.in_flight = true;
  client.blocks_done = 0;
  client.time_alone = time_alone;
}

bool HoldingPolicy::IssueSizedSlice(Time now, ClientId id, Client& client,
                                    std::optional<Duration> time_alone, bool beside,
                                    Decisions& out) {
  const KernelInfo& kernel = client.head->kernel;
  if (!time_alone || !kernel.sliceable) return false;
  const uint64_t grid = kernel.shape.grid.Count();
  const uint64_t remaining = client.started ? RemainingBlocks(client) : grid;
  const uint32_t blocks = SliceBlocks(now, kernel, *time_alone, remaining, beside);
  if (blocks == 0) return false;
  const LaunchForm form = LaunchForm::Slice(blocks);
  out.Issue(id, form);
  if (!client.started) {
    Start(client, form, time_alone);
    return true;
  }
  client.form = client.full_form = form;
  client.in_flight = true;
  return true;
}

void HoldingPolicy::IssueOriginal(ClientId id, Client& client, bool risky, Decisions& out) {
  out.Issue(id, LaunchForm::Original(), /*notify=*/true, /*foreground=*/false, risky);
  ++client.originals_running;
  client.head.reset();
}

void HoldingPolicy::IssueBeside(Time now, ClientId id, Client& client, Decisions& out) {
  const KernelInfo& kernel = client.head->kernel;
  if (client.started && client.form.sized_slice()) {
    // Its next slice once what is left of the budget allows one; held until then.
    IssueSizedSlice(now, id, client, client.time_alone, /*beside=*/true, out);
    return;
  }
  std::optional<FormChoice> choice;  // asked of the advisor once: its answers may count tries
  if (!client.started && MayRunOriginalBeside()) {
    choice = BackgroundForm(kernel);
    if (client.originals_running < options_.unshaped_in_flight &&
        RunsOriginal(now, kernel, *choice, /*beside=*/true)) {
      IssueOriginal(id, client, /*risky=*/false, out);
      return;
    }
    if (choice->form.kind != FormKind::kOriginal &&
        IssueSizedSlice(now, id, client, choice->original_time, /*beside=*/true, out)) {
      return;
    }
  }
  uint32_t allowed = BesideWorkers(kernel);
  if (allowed == 0) return;
  if (!client.started && !choice) {
    // What the advisor knows of the kernel (its time alone) may change the bound for it.
    choice = BackgroundForm(kernel);
    allowed = BesideWorkers(kernel);
    if (allowed == 0) return;
  }
  LaunchForm full = client.full_form;
  if (!client.started) full = choice->form;
  // Beside more important work only PTB runs: its width is what the bound limits.
  if (!client.started && full.kind != FormKind::kPreemptible && kernel.preemptible) {
    full = LaunchForm::Preemptible();
  }
  if (full.kind != FormKind::kPreemptible || WorkersOf(full, kernel) == 0) return;
  const LaunchForm form =
      allowed >= WorkersOf(full, kernel) ? full : LaunchForm::Preemptible(allowed);
  out.Issue(id, form);  // a start, or a resumption, as narrow as the bound is now
  if (!client.started) Start(client, full, choice ? choice->original_time : std::nullopt);
  client.form = form;
  client.full_form = full;
  client.in_flight = true;
}

}  // namespace tally::scheduler::internal
