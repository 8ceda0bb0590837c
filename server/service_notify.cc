// sd_notify(3)'s protocol by hand (service_notify.h): one datagram per notification to the
// AF_UNIX socket systemd names in NOTIFY_SOCKET.
#include "server/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "ipc/unique_fd.h"

namespace tally::server {

ServiceNotifier ServiceNotifier::FromEnvironment() {
  ServiceNotifier notifier;
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr || (socket[0] != '/' && socket[0] != '@')) return notifier;
  notifier.socket_ = socket;
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  const bool ours = pid == nullptr || std::strtoll(pid, nullptr, 10) == getpid();
  if (usec != nullptr && ours) {
    char* end = nullptr;
    const long long value = std::strtoll(usec, &end, 10);
    if (end != usec && *end == '\0' && value > 0) {
      notifier.watchdog_ = std::chrono::microseconds(value);
    }
  }
  return notifier;
}

void ServiceNotifier::Notify(std::string_view message) const {
  if (!enabled()) return;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof(address.sun_path)) return;
  std::memcpy(address.sun_path, socket_.data(), socket_.size());
  if (address.sun_path[0] == '@') address.sun_path[0] = '\0';  // the abstract namespace
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_.size());
  const ipc::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.valid() && sendto(fd.get(), message.data(), message.size(), MSG_NOSIGNAL,
                           reinterpret_cast<const sockaddr*>(&address), length) >= 0) {
    return;
  }
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    TALLY_LOG_WARN("tally-server: cannot notify systemd on {}: {}", socket_, std::strerror(errno));
  }
}

}  // namespace tally::server
