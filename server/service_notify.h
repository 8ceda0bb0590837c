// systemd's service notification protocol (sd_notify(3)), without libsystemd: under a unit of
// Type=notify, tally-server says READY=1 once it serves, STOPPING=1 when it stops, and, where
// the unit sets WatchdogSec, WATCHDOG=1 while its dispatcher makes rounds, so that systemd
// restarts a server whose dispatch thread hangs. Outside systemd (no NOTIFY_SOCKET) it does
// nothing.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tally::server {

class ServiceNotifier {
 public:
  // From NOTIFY_SOCKET (a path, or @name for the abstract namespace), WATCHDOG_USEC and
  // WATCHDOG_PID (the watchdog is this process's only when the pid is its own or unset).
  static ServiceNotifier FromEnvironment();

  bool enabled() const { return !socket_.empty(); }
  // How often systemd expects WATCHDOG=1; none when the unit has no watchdog.
  std::optional<std::chrono::microseconds> watchdog() const { return watchdog_; }

  // Sends one notification ("READY=1\nSTATUS=..."); failures are logged once, never fatal.
  void Notify(std::string_view message) const;

 private:
  std::string socket_;
  std::optional<std::chrono::microseconds> watchdog_;
};

}  // namespace tally::server
