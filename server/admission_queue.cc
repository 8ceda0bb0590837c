// The admission queue: tickets in a line, polled (a waiter checks every few milliseconds, since
// memory is freed by sessions that know nothing of the queue).
#include "server/admission_queue.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace tally::server {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(10);

std::string MiB(uint64_t bytes) { return absl::StrFormat("%d MiB", (bytes + (1 << 20) - 1) >> 20); }

}  // namespace

size_t AdmissionQueue::waiting() const {
  std::lock_guard lock(mutex_);
  return line_.size();
}

std::string AdmissionQueue::WhyWait(uint64_t ticket, const Waiter& waiter,
                                    const std::string& place) const {
  const auto position = std::find(line_.begin(), line_.end(), ticket) - line_.begin();
  const uint64_t free = waiter.free_bytes();
  if (position == 0 && waiter.bytes <= free) return "";
  return absl::StrFormat(
      "waiting for %s of device memory on %s (%s free now, %d job(s) ahead); "
      "up to %g s",
      MiB(waiter.bytes), place, MiB(free), position, absl::ToDoubleSeconds(timeout_));
}

std::string AdmissionQueue::Await(const Waiter& waiter, const std::string& place) {
  std::unique_lock lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  line_.push_back(ticket);
  const auto leave = [&] { line_.erase(std::find(line_.begin(), line_.end(), ticket)); };
  const absl::Time deadline = absl::Now() + timeout_;
  bool told = false;
  while (true) {
    const std::string why = WhyWait(ticket, waiter, place);
    if (why.empty()) {
      leave();
      return "";
    }
    std::string refusal;
    if (stopping_) refusal = "the server is shutting down";
    if (waiter.gone()) refusal = "it hung up while waiting";
    if (absl::Now() >= deadline) {
      refusal = absl::StrFormat(
          "it waited %g s (tally-server --admission-timeout-ms) for %s of device memory, but "
          "only %s is free",
          absl::ToDoubleSeconds(timeout_), MiB(waiter.bytes), MiB(waiter.free_bytes()));
    }
    if (!refusal.empty()) {
      leave();
      return refusal;
    }
    const bool tell_now = !told;
    told = true;
    lock.unlock();  // telling writes to the peer's socket, which must hold no one else up
    if (tell_now) waiter.tell(why);
    std::this_thread::sleep_for(kPollInterval);
    lock.lock();
  }
}

}  // namespace tally::server
