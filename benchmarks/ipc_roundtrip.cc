// Benchmark: IPC round-trip latency (median, p99) of a small request/response between a client
// and a server process pinned to different cores, and one-way message throughput, each beside a
// Unix-socket ping-pong baseline measured in the same run. Figures only: nothing is asserted.
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/status.h"
#include "ipc/connection.h"
#include "ipc/message.h"
#include "ipc/testing/example_messages.h"
#include "ipc/testing/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using tally::ipc::ClientConnection;
using tally::ipc::Decode;
using tally::ipc::kFlagOneWay;
using tally::ipc::ParseMessage;
using tally::ipc::PostMessage;
using tally::ipc::ServerConnection;
using tally::ipc::WaitOptions;
using tally::ipc::testing::Ping;
using tally::ipc::testing::Pong;

constexpr const char kUsage[] =
    "Usage: ipc_roundtrip [--round-trips N] [--messages N] [--spin N]\n"
    "Measures N round trips (default 200000) of a Ping/Pong pair and N one-way messages (default\n"
    "2000000) through the shared-memory rings and through a Unix socket, client and server in\n"
    "two processes on different cores. --spin sets the spin iterations before a futex sleep\n"
    "(default: ipc's); --spin 0 shows the cost of sleeping on every wait.\n";

constexpr uint64_t kStop = UINT64_MAX;
constexpr absl::Duration kTimeout = absl::Seconds(30);

struct Options {
  int round_trips = 200000;
  int messages = 2000000;
  int spin = tally::ipc::kDefaultSpinIterations;
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "ipc_roundtrip: %s\n", what.c_str());
  std::exit(1);
}

void DieIfError(const absl::Status& status) {
  if (!status.ok()) Die(status.ToString());
}

// Pins the calling process to `cpu`; returns false when that is not possible.
bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// The same small request on both transports: the ring's message header plus a Ping.
struct SocketMessage {
  tally::ipc::MessageHeader header;
  Ping ping;
};

// ---- server process ----

absl::Status ServeRings(ServerConnection& connection, int spin) {
  WaitOptions wait = connection.MakeWaitOptions(kTimeout);
  wait.spin_iterations = spin;
  while (true) {
    TALLY_ASSIGN_OR_RETURN(std::span<const std::byte> record, connection.requests().Peek(wait));
    TALLY_ASSIGN_OR_RETURN(const tally::ipc::ReceivedMessage message, ParseMessage(record));
    TALLY_ASSIGN_OR_RETURN(const tally::ipc::Decoded<Ping> ping, Decode<Ping>(message));
    TALLY_RETURN_IF_ERROR(connection.requests().Release());
    if ((message.header.flags & kFlagOneWay) != 0) continue;
    TALLY_RETURN_IF_ERROR(PostMessage(connection.responses(), message.header.sequence, 0,
                                      Pong{ping.fields.value}, wait));
    if (ping.fields.value == kStop) return absl::OkStatus();
  }
}

bool ReadFully(int fd, void* data, size_t size) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = read(fd, bytes, size);
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

bool WriteFully(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t sent = write(fd, bytes, size);
    if (sent <= 0) return false;
    bytes += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

absl::Status ServeSocket(int fd) {
  SocketMessage message;
  while (ReadFully(fd, &message, sizeof(message))) {
    if ((message.header.flags & kFlagOneWay) != 0) continue;
    if (!WriteFully(fd, &message, sizeof(message))) break;
    if (message.ping.value == kStop) return absl::OkStatus();
  }
  return absl::UnavailableError("socket baseline: client went away");
}

// ---- client process ----

struct Latency {
  double median_us, p99_us, mean_us;
};

Latency Summarize(std::vector<double> samples_ns) {
  std::sort(samples_ns.begin(), samples_ns.end());
  double sum = 0;
  for (double s : samples_ns) sum += s;
  const auto at = [&](double q) {
    return samples_ns[std::min(samples_ns.size() - 1, static_cast<size_t>(q * samples_ns.size()))];
  };
  return {at(0.5) / 1000, at(0.99) / 1000, sum / samples_ns.size() / 1000};
}

double NanosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

// The benchmark's two operations on one transport.
struct Transport {
  virtual ~Transport() = default;
  virtual void RoundTrip(uint64_t value) = 0;
  virtual void PostOneWay(uint64_t value) = 0;
};

class RingTransport : public Transport {
 public:
  RingTransport(ClientConnection& connection, int spin)
      : connection_(connection), wait_(connection.MakeWaitOptions(kTimeout)) {
    wait_.spin_iterations = spin;
  }
  void RoundTrip(uint64_t value) override {
    DieIfError(PostMessage(connection_.requests(), ++sequence_, 0, Ping{value}, wait_));
    absl::StatusOr<std::span<const std::byte>> record = connection_.responses().Peek(wait_);
    DieIfError(record.status());
    absl::StatusOr<tally::ipc::ReceivedMessage> message = ParseMessage(*record);
    DieIfError(message.status());
    if (message->header.sequence != sequence_) Die("ring: response out of order");
    DieIfError(connection_.responses().Release());
  }
  void PostOneWay(uint64_t value) override {
    DieIfError(PostMessage(connection_.requests(), ++sequence_, kFlagOneWay, Ping{value}, wait_));
  }

 private:
  ClientConnection& connection_;
  WaitOptions wait_;
  uint64_t sequence_ = 0;
};

class SocketTransport : public Transport {
 public:
  explicit SocketTransport(int fd) : fd_(fd) {}
  void RoundTrip(uint64_t value) override {
    SocketMessage message = Make(value, 0);
    if (!WriteFully(fd_, &message, sizeof(message)) || !ReadFully(fd_, &message, sizeof(message))) {
      Die("socket baseline: server went away");
    }
  }
  void PostOneWay(uint64_t value) override {
    const SocketMessage message = Make(value, kFlagOneWay);
    if (!WriteFully(fd_, &message, sizeof(message))) Die("socket baseline: server went away");
  }

 private:
  SocketMessage Make(uint64_t value, uint32_t flags) {
    return {{Ping::kType, flags, ++sequence_, sizeof(Ping), 0}, Ping{value}};
  }
  int fd_;
  uint64_t sequence_ = 0;
};

struct Figures {
  Latency latency;
  double posted_per_second;    // rate of posting, back to back
  double consumed_per_second;  // until the server had taken them all (a round trip behind)
};

Figures Measure(Transport& transport, const Options& options) {
  for (int i = 0; i < std::min(options.round_trips, 20000); ++i) transport.RoundTrip(i);  // warm-up
  std::vector<double> samples(static_cast<size_t>(options.round_trips));
  for (double& sample : samples) {
    const Clock::time_point start = Clock::now();
    transport.RoundTrip(1);
    sample = NanosSince(start);
  }
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < options.messages; ++i) transport.PostOneWay(static_cast<uint64_t>(i));
  const double posted_ns = NanosSince(start);
  transport.RoundTrip(2);  // the server has consumed everything once this returns
  const double consumed_ns = NanosSince(start);
  return {Summarize(std::move(samples)), options.messages / posted_ns * 1e9,
          options.messages / consumed_ns * 1e9};
}

Options ParseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto next = [&]() -> int {
      if (i + 1 >= argc) Die("missing value for " + arg);
      return std::atoi(argv[++i]);
    };
    if (arg == "--round-trips") {
      options.round_trips = std::max(1, next());
    } else if (arg == "--messages") {
      options.messages = std::max(1, next());
    } else if (arg == "--spin") {
      options.spin = std::max(0, next());
    } else {
      std::fputs(kUsage, arg == "--help" ? stdout : stderr);
      std::exit(arg == "--help" ? 0 : 2);
    }
  }
  return options;
}

void Print(const char* name, const Figures& f) {
  std::printf(
      "  %-20s round trip median %7.2f us  p99 %7.2f us  mean %7.2f us | one-way %6.2f M "
      "msg/s posted, %6.2f M msg/s consumed\n",
      name, f.latency.median_us, f.latency.p99_us, f.latency.mean_us, f.posted_per_second / 1e6,
      f.consumed_per_second / 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseArgs(argc, argv);
  const std::vector<int> cpus = AllowedCpus();
  const bool separate_cores = cpus.size() >= 2;
  tally::ipc::testing::TempDir dir;
  tally::ipc::ListenerOptions listen_options;
  listen_options.path = dir.File("server.sock");
  absl::StatusOr<tally::ipc::Listener> listener = tally::ipc::Listener::Listen(listen_options);
  DieIfError(listener.status());
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) Die("socketpair failed");

  const pid_t server = fork();
  if (server == 0) {
    close(sockets[0]);
    if (separate_cores) PinTo(cpus[1]);
    absl::StatusOr<ServerConnection> connection = listener->Accept();
    absl::Status status = connection.status();
    if (status.ok()) status = ServeRings(*connection, options.spin);
    if (status.ok()) status = ServeSocket(sockets[1]);
    if (!status.ok()) std::fprintf(stderr, "ipc_roundtrip server: %s\n", status.ToString().c_str());
    _exit(status.ok() ? 0 : 1);
  }
  close(sockets[1]);
  if (separate_cores) {
    PinTo(cpus[0]);
    std::printf("client on CPU %d, server on CPU %d", cpus[0], cpus[1]);
  } else {
    std::printf(
        "only one core available: client and server share it, figures are not "
        "representative");
  }
  std::printf("; %d round trips, %d one-way messages of %zu bytes, spin %d\n", options.round_trips,
              options.messages, sizeof(SocketMessage), options.spin);

  tally::ipc::ConnectOptions connect_options;
  connect_options.path = listener->path();
  connect_options.command = "ipc_roundtrip";
  absl::StatusOr<ClientConnection> client = ClientConnection::Connect(connect_options);
  DieIfError(client.status());

  RingTransport rings(*client, options.spin);
  const Figures ring_figures = Measure(rings, options);
  rings.RoundTrip(kStop);
  SocketTransport socket(sockets[0]);
  const Figures socket_figures = Measure(socket, options);
  socket.RoundTrip(kStop);

  Print("shared-memory rings", ring_figures);
  Print("unix socket", socket_figures);
  int status = 0;
  waitpid(server, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
