// Grants (tally-ctl grant): listening sockets of their own, each in a directory of its own that
// a batch system or a device plugin hands to one job, whose clients get the grant's ceiling
// (ipc::ClientCeiling: a priority they cannot exceed, device and page-locked memory limits)
// whatever their environment asks. They live as long as the server, or until revoked.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ipc/connection.h"
#include "ipc/control.h"

namespace tally::server {

struct Grant {
  Grant(ipc::ClientCeiling ceiling, ipc::Listener listener, std::string directory)
      : ceiling(std::move(ceiling)),
        listener(std::move(listener)),
        directory(std::move(directory)) {}
  // The record tally-ctl shows.
  ipc::GrantStatus Status() const;

  const ipc::ClientCeiling ceiling;
  ipc::Listener listener;
  const std::string directory;  // holds the socket and nothing else
  std::atomic<int> clients{0};  // connected through it now
  // Revoked with its clients ended: their sessions stop at their next wait.
  std::atomic<bool> ended{false};
};

class Grants {
 public:
  // `listen`: the server's own listener options, which grants' listeners share but for the
  // path and the ceiling; `directory`: where each grant's directory is made.
  Grants(ipc::ListenerOptions listen, std::string directory)
      : listen_(std::move(listen)), directory_(std::move(directory)) {}
  Grants(const Grants&) = delete;
  Grants& operator=(const Grants&) = delete;
  // Removes what is left of the grants' directories.
  ~Grants();

  const ipc::PeerAccess& access() const { return listen_.access; }
  // Opens DIRECTORY/NAME/server.sock for a grant (an empty name becomes grant-N).
  // InvalidArgument for a bad name, AlreadyExists for a name in use.
  absl::StatusOr<std::shared_ptr<Grant>> Add(ipc::ClientCeiling ceiling);
  // Removes the grant's socket and directory (new clients can no longer connect); its clients
  // end at once when `end_clients`, else they run on under its ceiling. NotFound for no such
  // grant.
  absl::StatusOr<std::shared_ptr<Grant>> Revoke(std::string_view name, bool end_clients);
  std::vector<std::shared_ptr<Grant>> List() const;

  // The directory grants are made in for a server listening on `socket_path`:
  // PATH-without-.sock + ".grants".
  static std::string DirectoryFor(const std::string& socket_path);

 private:
  absl::Status MakeDirectory(const std::string& path) const;

  const ipc::ListenerOptions listen_;
  const std::string directory_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Grant>> grants_;  // under mutex_
  int named_ = 0;                               // under mutex_: grant-N names given
};

}  // namespace tally::server
