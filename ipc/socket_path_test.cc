// Socket path resolution: TALLY_SERVER wins, default directories are created private and
// refused when someone else could have planted or can read them; paths longer than sun_path.
#include "ipc/socket_path.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "ipc/testing/temp_dir.h"
#include "ipc/unix_socket.h"

namespace tally::ipc {
namespace {

using testing::TempDir;

// Sets or clears environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name); old != nullptr) {
      old_ = old;
      had_ = true;
    }
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// A socket file bound at `path` (nobody listens: only its presence matters here).
void MakeSocketFile(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(path.size() < sizeof(address.sun_path));
  path.copy(address.sun_path, path.size());
  REQUIRE(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
  close(fd);
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

TEST_CASE("TALLY_SERVER names the socket as given") {
  ScopedEnv server("TALLY_SERVER", "/some/where/else.sock");
  auto path = ResolveSocketPath(DirectoryMode::kCreate);
  REQUIRE(path.ok());
  CHECK(*path == "/some/where/else.sock");
}

TEST_CASE("the default socket lives in a private directory under XDG_RUNTIME_DIR") {
  TempDir runtime;
  ScopedEnv server("TALLY_SERVER", nullptr);
  ScopedEnv run_dir("TALLY_RUN_DIR", nullptr);
  ScopedEnv xdg("XDG_RUNTIME_DIR", runtime.path().c_str());
  const std::string dir = runtime.File("tally");

  auto client_view = ResolveSocketPath(DirectoryMode::kCheckIfPresent);
  REQUIRE(client_view.ok());
  CHECK(access(dir.c_str(), F_OK) != 0);  // clients never create it

  auto path = ResolveSocketPath(DirectoryMode::kCreate);
  REQUIRE(path.ok());
  CHECK(*path == dir + "/server.sock");
  CHECK(ModeOf(dir) == 0700);
  CHECK(ResolveSocketPath(DirectoryMode::kCheckIfPresent).ok());

  SECTION("group or world access is refused") {
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    auto refused = ResolveSocketPath(DirectoryMode::kCheckIfPresent);
    CHECK(absl::IsFailedPrecondition(refused.status()));
    CHECK_THAT(std::string(refused.status().message()), Catch::Contains("0755"));
  }
  SECTION("a symlink planted in its place is refused") {
    REQUIRE(rmdir(dir.c_str()) == 0);
    REQUIRE(symlink(runtime.path().c_str(), dir.c_str()) == 0);
    CHECK(absl::IsFailedPrecondition(ResolveSocketPath(DirectoryMode::kCreate).status()));
  }
  SECTION("a directory of another owner is refused (needs root to create)") {
    if (geteuid() != 0) return;
    REQUIRE(chown(dir.c_str(), 65534, 65534) == 0);
    CHECK(absl::IsFailedPrecondition(ResolveSocketPath(DirectoryMode::kCreate).status()));
  }
}

TEST_CASE("in a run directory of servers per device, clients take the only one or ask") {
  TempDir runtime;
  const std::string dir = runtime.File("run");
  ScopedEnv server("TALLY_SERVER", nullptr);
  ScopedEnv run_dir("TALLY_RUN_DIR", dir.c_str());
  REQUIRE(RunDirectory(DirectoryMode::kCreate).value() == dir);
  CHECK(ModeOf(dir) == 0700);
  CHECK(ResolveSocketPath(DirectoryMode::kCheckIfPresent).value() == dir + "/server.sock");

  const std::string first = DeviceSocketPath(dir, "GPU-00000000-0000-0000-0000-000000000001");
  MakeSocketFile(first);
  MakeSocketFile(dir + "/GPU-not-a-socket.sock.tmp");
  CHECK(ResolveSocketPath(DirectoryMode::kCheckIfPresent).value() == first);

  const std::string second = DeviceSocketPath(dir, "GPU-00000000-0000-0000-0000-000000000000");
  MakeSocketFile(second);
  CHECK(ServerSockets(dir) == std::vector<std::string>{second, first});
  auto ambiguous = ResolveSocketPath(DirectoryMode::kCheckIfPresent);
  REQUIRE(absl::IsFailedPrecondition(ambiguous.status()));
  CHECK_THAT(std::string(ambiguous.status().message()),
             Catch::Contains(second) && Catch::Contains("tally-run --device"));
}

TEST_CASE("a shared run directory may be searched by others, never written") {
  TempDir runtime;
  const std::string dir = runtime.File("run");
  ScopedEnv run_dir("TALLY_RUN_DIR", dir.c_str());
  ScopedEnv trusted("TALLY_SERVER_UID", nullptr);
  REQUIRE(mkdir(dir.c_str(), 0750) == 0);
  REQUIRE(chmod(dir.c_str(), 0750) == 0);
  CHECK(EnsureRunDirectory(dir, DirectoryMode::kCreate).ok());  // the service's /run/tally
  CHECK(RunDirectory(DirectoryMode::kCheckIfPresent).value() == dir);
  CHECK_FALSE(EnsurePrivateDirectory(dir, DirectoryMode::kCheckIfPresent).ok());
  REQUIRE(chmod(dir.c_str(), 0770) == 0);
  auto writable = RunDirectory(DirectoryMode::kCheckIfPresent);
  REQUIRE(absl::IsFailedPrecondition(writable.status()));
  CHECK_THAT(std::string(writable.status().message()),
             Catch::Contains("writable by its owner alone"));
}

TEST_CASE("without XDG_RUNTIME_DIR the socket goes to /tmp/tally-UID") {
  ScopedEnv server("TALLY_SERVER", nullptr);
  ScopedEnv run_dir("TALLY_RUN_DIR", nullptr);
  ScopedEnv xdg("XDG_RUNTIME_DIR", nullptr);
  auto path = ResolveSocketPath(DirectoryMode::kCheckIfPresent);
  if (!path.ok()) {  // someone else's /tmp/tally-UID on this machine: the refusal is the point
    CHECK(absl::IsFailedPrecondition(path.status()));
    return;
  }
  CHECK(*path == "/tmp/tally-" + std::to_string(geteuid()) + "/server.sock");
}

}  // namespace
}  // namespace tally::ipc

namespace tally::ipc {
namespace {

TEST_CASE("a socket whose path is longer than sun_path is listened and connected on") {
  TempDir dir;
  // As a grant's socket: <run dir>/GPU-<uuid>.grants/<device ID>/server.sock.
  std::string path = dir.path() + "/GPU-00000000-1111-2222-3333-444444444444.grants";
  REQUIRE(mkdir(path.c_str(), 0700) == 0);
  path += "/GPU-00000000-1111-2222-3333-444444444444-best-effort-0";
  REQUIRE(mkdir(path.c_str(), 0700) == 0);
  path += "/server.sock";
  REQUIRE(path.size() >= sizeof(sockaddr_un::sun_path));
  auto listener = ListenUnix(path);
  REQUIRE(listener.ok());
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);  // the socket is at the path itself
  CHECK(S_ISSOCK(st.st_mode));
  auto connected = ConnectUnix(path);
  CHECK(connected.ok());
  CHECK(AcceptUnix(listener->get()).ok());
  CHECK_FALSE(ListenUnix(dir.path() + "/" + std::string(120, 'x')).ok());
}

}  // namespace
}  // namespace tally::ipc
