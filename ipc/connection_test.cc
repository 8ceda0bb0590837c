// Connection tests over real Unix sockets: a client and a server process exchanging messages and
// bulk data, peer death noticed promptly on both sides, protocol and schema mismatches named on
// both sides, refusal of other users, stale sockets and handshake timeouts.
#include "ipc/connection.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "ipc/handshake.h"
#include "ipc/message.h"
#include "ipc/protocol_version.h"
#include "ipc/testing/child_process.h"
#include "ipc/testing/example_messages.h"
#include "ipc/testing/temp_dir.h"
#include "ipc/unix_socket.h"

namespace tally::ipc {
namespace {

using testing::BulkChecksum;
using testing::Checksum;
using testing::ChildProcess;
using testing::Ping;
using testing::Pong;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

constexpr absl::Duration kTestTimeout = absl::Seconds(10);

ListenerOptions Options(const std::string& path) {
  ListenerOptions options;
  options.path = path;
  options.segment.bulk_size = 4 << 20;
  return options;
}

ConnectOptions Client(const std::string& path) {
  ConnectOptions options;
  options.path = path;
  options.command = "connection_test";
  options.priority = ClientPriority::Level(5);
  return options;
}

// The server side of the exchange test: answers each Ping with value + 1 and each BulkChecksum
// with the checksum of the block it names, until `count` requests are served.
absl::Status Serve(ServerConnection& connection, int count) {
  const WaitOptions wait = connection.MakeWaitOptions(kTestTimeout);
  for (int i = 0; i < count; ++i) {
    TALLY_ASSIGN_OR_RETURN(std::span<const std::byte> record, connection.requests().Peek(wait));
    TALLY_ASSIGN_OR_RETURN(const ReceivedMessage message, ParseMessage(record));
    uint64_t answer = 0;
    TALLY_RETURN_IF_ERROR(testing::DispatchExample(
        message, [&](const MessageHeader&, const auto& decoded) -> absl::Status {
          using T = std::decay_t<decltype(decoded.fields)>;
          if constexpr (std::is_same_v<T, Ping>) {
            answer = decoded.fields.value + 1;
          } else if constexpr (std::is_same_v<T, BulkChecksum>) {
            TALLY_ASSIGN_OR_RETURN(std::span<std::byte> block,
                                   connection.bulk().Resolve(decoded.fields.block));
            answer = Checksum(block);
          } else {
            return absl::InvalidArgumentError("unexpected message");
          }
          return absl::OkStatus();
        }));
    const uint64_t sequence = message.header.sequence;
    TALLY_RETURN_IF_ERROR(connection.requests().Release());
    TALLY_RETURN_IF_ERROR(PostMessage(connection.responses(), sequence, 0, Pong{answer}, wait));
  }
  return absl::OkStatus();
}

absl::StatusOr<Pong> Call(ClientConnection& client, uint64_t sequence, const auto& request) {
  const WaitOptions wait = client.MakeWaitOptions(kTestTimeout);
  TALLY_RETURN_IF_ERROR(PostMessage(client.requests(), sequence, 0, request, wait));
  TALLY_ASSIGN_OR_RETURN(std::span<const std::byte> record, client.responses().Peek(wait));
  TALLY_ASSIGN_OR_RETURN(const ReceivedMessage message, ParseMessage(record));
  if (message.header.sequence != sequence) return absl::InternalError("response out of order");
  TALLY_ASSIGN_OR_RETURN(const Decoded<Pong> pong, Decode<Pong>(message));
  TALLY_RETURN_IF_ERROR(client.responses().Release());
  return pong.fields;
}

TEST_CASE("a client process and a server process exchange messages and bulk data") {
  TempDir dir;
  auto listener = Listener::Listen(Options(dir.File("server.sock")));
  REQUIRE(listener.ok());
  constexpr int kPings = 2000;
  ChildProcess server = ChildProcess::Fork([&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(ServerConnection connection, listener->Accept());
    const ClientInfo& client = connection.client();
    if (client.pid != getppid() || client.uid != geteuid() ||
        client.priority != ClientPriority::Level(5) || !client.priority.is_set() ||
        client.command != "connection_test" || client.client_id == ClientId()) {
      return absl::InternalError("wrong client identity: " + client.command);
    }
    return Serve(connection, kPings + 1);
  });

  auto client = ClientConnection::Connect(Client(listener->path()));
  REQUIRE(client.ok());
  for (uint64_t i = 0; i < kPings; ++i) {
    auto pong = Call(*client, i, Ping{i * 10});
    REQUIRE(pong.ok());
    REQUIRE(pong->value == i * 10 + 1);
  }
  // A payload larger than any ring record travels through the bulk area.
  auto block = client->bulk().Allocate(3 << 20);
  REQUIRE(block.ok());
  std::span<std::byte> bytes = client->bulk().Bytes(*block);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(i * 13);
  auto pong = Call(*client, kPings, BulkChecksum{*block, 0});
  REQUIRE(pong.ok());
  CHECK(pong->value == Checksum(bytes));
  CHECK(server.Wait() == 0);
}

// Every wait sleeps at once (no spinning): the futex words are shared between processes, not
// private, and a lost wake-up would end the run with a timeout.
TEST_CASE("futex wake-ups cross processes") {
  TempDir dir;
  auto listener = Listener::Listen(Options(dir.File("server.sock")));
  REQUIRE(listener.ok());
  constexpr int kRounds = 3000;
  ChildProcess server = ChildProcess::Fork([&]() -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(ServerConnection connection, listener->Accept());
    WaitOptions wait = connection.MakeWaitOptions(kTestTimeout);
    wait.spin_iterations = 0;
    for (int i = 0; i < kRounds; ++i) {
      TALLY_ASSIGN_OR_RETURN(std::span<const std::byte> record, connection.requests().Peek(wait));
      TALLY_ASSIGN_OR_RETURN(const ReceivedMessage message, ParseMessage(record));
      TALLY_ASSIGN_OR_RETURN(const Decoded<Ping> ping, Decode<Ping>(message));
      TALLY_RETURN_IF_ERROR(connection.requests().Release());
      TALLY_RETURN_IF_ERROR(PostMessage(connection.responses(), message.header.sequence, 0,
                                        Pong{ping.fields.value + 1}, wait));
    }
    return absl::OkStatus();
  });
  auto client = ClientConnection::Connect(Client(listener->path()));
  REQUIRE(client.ok());
  WaitOptions wait = client->MakeWaitOptions(kTestTimeout);
  wait.spin_iterations = 0;
  int wrong = 0;
  for (uint64_t i = 0; i < kRounds; ++i) {
    REQUIRE(PostMessage(client->requests(), i, 0, Ping{i}, wait).ok());
    auto record = client->responses().Peek(wait);
    REQUIRE(record.ok());
    auto message = ParseMessage(*record);
    REQUIRE(message.ok());
    auto pong = Decode<Pong>(*message);
    REQUIRE(pong.ok());
    if (pong->fields.value != i + 1) ++wrong;
    REQUIRE(client->responses().Release().ok());
  }
  CHECK(wrong == 0);
  CHECK(server.Wait() == 0);
}

// Kills `child` after a delay while this thread waits; returns how long the wait took.
template <typename WaitFn>
std::chrono::milliseconds KillDuringWait(ChildProcess& child, WaitFn wait, absl::Status* result) {
  std::jthread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    child.Kill();
  });
  const auto start = Clock::now();
  *result = wait();
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

TEST_CASE("a client waiting for a response notices a killed server promptly") {
  TempDir dir;
  auto listener = Listener::Listen(Options(dir.File("server.sock")));
  REQUIRE(listener.ok());
  ChildProcess server = ChildProcess::Fork([&]() -> absl::Status {
    auto connection = listener->Accept();
    pause();  // accepts, then never answers
    return connection.status();
  });
  auto client = ClientConnection::Connect(Client(listener->path()));
  REQUIRE(client.ok());
  const WaitOptions wait = client->MakeWaitOptions(absl::Seconds(30));
  REQUIRE(PostMessage(client->requests(), 1, 0, Ping{1}, wait).ok());
  absl::Status waited;
  const auto took = KillDuringWait(
      server, [&] { return client->responses().Peek(wait).status(); }, &waited);
  CHECK(absl::IsUnavailable(waited));
  CHECK(took < std::chrono::seconds(2));
  CHECK(absl::IsUnavailable(client->CheckPeerAlive()));
}

TEST_CASE("a server waiting for requests notices a killed client promptly") {
  TempDir dir;
  auto listener = Listener::Listen(Options(dir.File("server.sock")));
  REQUIRE(listener.ok());
  const std::string path = listener->path();
  ChildProcess client = ChildProcess::Fork([&]() -> absl::Status {
    auto connection = ClientConnection::Connect(Client(path));
    pause();
    return connection.status();
  });
  auto connection = listener->Accept();
  REQUIRE(connection.ok());
  CHECK(connection->CheckPeerAlive().ok());
  absl::Status waited;
  const auto took = KillDuringWait(
      client,
      [&] {
        return connection->requests().Peek(connection->MakeWaitOptions(kTestTimeout)).status();
      },
      &waited);
  CHECK(absl::IsUnavailable(waited));
  CHECK(took < std::chrono::seconds(2));
}

TEST_CASE("a protocol version mismatch is named on both sides") {
  TempDir dir;
  SECTION("client newer than the server") {
    auto listener = Listener::Listen(Options(dir.File("server.sock")));
    REQUIRE(listener.ok());
    absl::Status accepted;
    std::jthread server([&] { accepted = listener->Accept().status(); });
    auto socket = ConnectUnix(listener->path());
    REQUIRE(socket.ok());
    Hello hello{};
    hello.prefix = {kHelloMagic, kProtocolVersion + 98, sizeof(Hello) + 64, 0};  // a future hello
    REQUIRE(SendAll(socket->get(), BytesOf(hello)).ok());
    HelloReply reply{};
    REQUIRE(ReceiveExact(socket->get(), BytesOf(reply), absl::Now() + kTestTimeout).ok());
    server.join();
    CHECK(reply.prefix.protocol_version == kProtocolVersion);
    CHECK(reply.status == static_cast<uint32_t>(HelloStatus::kVersionMismatch));
    CHECK(absl::IsFailedPrecondition(accepted));
    CHECK_THAT(std::string(accepted.message()),
               Catch::Contains(absl::StrFormat("version %d", kProtocolVersion + 98)) &&
                   Catch::Contains(absl::StrFormat("version %d", kProtocolVersion)));
  }
  SECTION("server newer than the client") {
    auto raw_listener = ListenUnix(dir.File("server.sock"));
    REQUIRE(raw_listener.ok());
    std::jthread server([&] {
      auto socket = AcceptUnix(raw_listener->get());
      if (!socket.ok()) return;
      HelloReply reply{};
      reply.prefix = {kReplyMagic, kProtocolVersion + 1, sizeof(HelloReply) + 8, 0};
      SendAll(socket->get(), BytesOf(reply)).IgnoreError();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    });
    auto client = ClientConnection::Connect(Client(dir.File("server.sock")));
    REQUIRE(!client.ok());
    CHECK(absl::IsFailedPrecondition(client.status()));
    CHECK_THAT(std::string(client.status().message()),
               Catch::Contains(absl::StrFormat("version %d", kProtocolVersion + 1)) &&
                   Catch::Contains(absl::StrFormat("version %d", kProtocolVersion)));
  }
}

TEST_CASE("a message schema mismatch is named on both sides") {
  TempDir dir;
  ListenerOptions options = Options(dir.File("server.sock"));
  options.schema_version = 3;
  auto listener = Listener::Listen(options);
  REQUIRE(listener.ok());
  absl::Status accepted;
  std::jthread server([&] { accepted = listener->Accept().status(); });
  ConnectOptions client_options = Client(listener->path());
  client_options.schema_version = 4;
  auto client = ClientConnection::Connect(client_options);
  server.join();
  REQUIRE(!client.ok());
  CHECK_THAT(std::string(client.status().message()),
             Catch::Contains("schema 3") && Catch::Contains("schema 4"));
  CHECK_THAT(std::string(accepted.message()),
             Catch::Contains("schema 3") && Catch::Contains("schema 4"));
}

TEST_CASE("a client's slowdown budget reaches the server, one out of range is refused clearly") {
  TempDir dir;
  auto listener = Listener::Listen(Options(dir.File("server.sock")));
  REQUIRE(listener.ok());
  ConnectOptions client_options = Client(listener->path());
  client_options.slowdown_budget = SlowdownBudget{0.15, 0.95};
  {
    absl::StatusOr<ServerConnection> accepted = absl::UnknownError("not run");
    std::jthread server([&] { accepted = listener->Accept(); });
    auto client = ClientConnection::Connect(client_options);
    server.join();
    REQUIRE(client.ok());
    REQUIRE(accepted.ok());
    CHECK(accepted->client().slowdown_budget == SlowdownBudget{0.15, 0.95});
  }
  client_options.slowdown_budget = SlowdownBudget{-0.5, 0.99};  // a peer that skipped Parse
  absl::Status refused;
  std::jthread server([&] { refused = listener->Accept().status(); });
  auto client = ClientConnection::Connect(client_options);
  server.join();
  REQUIRE_FALSE(client.ok());
  CHECK(absl::IsInvalidArgument(client.status()));
  CHECK_THAT(std::string(client.status().message()),
             Catch::Contains("its slowdown budget: a slowdown budget is between 0% and 1000%"));
  CHECK(absl::IsInvalidArgument(refused));
}

// Both sides read the peer's uid with SO_PEERCRED. Connecting as another user needs root (to
// change uid); without it the same code path runs with the accepted uid set to one we are not.
TEST_CASE("a peer running as another user is refused") {
  TempDir dir;
  SECTION("the server refuses a client of another uid") {
    ListenerOptions options = Options(dir.File("server.sock"));
    options.access = PeerAccess::OwnerOnly(geteuid() + 1);
    auto listener = Listener::Listen(options);
    REQUIRE(listener.ok());
    absl::Status accepted;
    std::jthread server([&] { accepted = listener->Accept().status(); });
    auto client = ClientConnection::Connect(Client(listener->path()));
    server.join();
    CHECK(absl::IsPermissionDenied(client.status()));
    CHECK_THAT(std::string(client.status().message()), Catch::Contains("refused"));
    CHECK(absl::IsPermissionDenied(accepted));
    CHECK_THAT(std::string(accepted.message()),
               Catch::Contains(absl::StrFormat("uid %d", geteuid())));
  }
  SECTION("the client refuses a server of another uid") {
    auto listener = Listener::Listen(Options(dir.File("server.sock")));
    REQUIRE(listener.ok());
    std::jthread server([&] { listener->Accept().status().IgnoreError(); });
    ConnectOptions options = Client(listener->path());
    options.trust.own = geteuid() + 1;
    auto client = ClientConnection::Connect(options);
    CHECK(absl::IsPermissionDenied(client.status()));
  }
  SECTION("a real process of another uid (needs root)") {
    if (geteuid() != 0) {
      WARN("not root: cannot start a process of another uid; covered by the sections above");
      return;
    }
    REQUIRE(chmod(dir.path().c_str(), 0711) == 0);
    auto listener = Listener::Listen(Options(dir.File("server.sock")));
    REQUIRE(listener.ok());
    REQUIRE(chmod(listener->path().c_str(), 0777) == 0);
    const std::string path = listener->path();
    ChildProcess intruder = ChildProcess::Fork([&]() -> absl::Status {
      constexpr uid_t kNobody = 65534;
      if (setgroups(0, nullptr) != 0 || setresgid(kNobody, kNobody, kNobody) != 0 ||
          setresuid(kNobody, kNobody, kNobody) != 0) {
        return absl::InternalError("cannot become nobody");
      }
      ConnectOptions options = Client(path);
      options.trust.other = 0;
      auto client = ClientConnection::Connect(options);
      return absl::IsPermissionDenied(client.status()) ? absl::OkStatus()
                                                       : absl::InternalError("not refused");
    });
    auto accepted = listener->Accept();
    CHECK(absl::IsPermissionDenied(accepted.status()));
    CHECK_THAT(std::string(accepted.status().message()), Catch::Contains("uid 65534"));
    CHECK(intruder.Wait() == 0);
  }
}

TEST_CASE("a stale socket is replaced, a live server's socket and other files are not") {
  TempDir dir;
  const std::string path = dir.File("server.sock");
  {
    auto first = Listener::Listen(Options(path));
    REQUIRE(first.ok());
    auto second = Listener::Listen(Options(path));
    CHECK(absl::IsAlreadyExists(second.status()));
  }
  CHECK(access(path.c_str(), F_OK) != 0);  // the listener removed its socket

  {  // a crashed server's socket: bound, never unlinked, nobody listening
    auto stale = ListenUnix(path);
    REQUIRE(stale.ok());
  }
  CHECK(access(path.c_str(), F_OK) == 0);
  CHECK(Listener::Listen(Options(path)).ok());

  std::ofstream(dir.File("file")) << "not a socket";
  CHECK(absl::IsFailedPrecondition(Listener::Listen(Options(dir.File("file"))).status()));
}

TEST_CASE("connecting without a server and stalling the handshake give clear errors") {
  TempDir dir;
  auto missing = ClientConnection::Connect(Client(dir.File("none.sock")));
  CHECK(absl::IsUnavailable(missing.status()));
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("tally-server"));

  ListenerOptions options = Options(dir.File("server.sock"));
  options.handshake_timeout = absl::Milliseconds(100);
  auto listener = Listener::Listen(options);
  REQUIRE(listener.ok());
  auto silent = ConnectUnix(listener->path());  // connects, never says hello
  REQUIRE(silent.ok());
  const auto start = Clock::now();
  CHECK(absl::IsDeadlineExceeded(listener->Accept().status()));
  CHECK(Clock::now() - start < std::chrono::seconds(2));
}

}  // namespace
}  // namespace tally::ipc

namespace tally::ipc {
namespace {

TEST_CASE("a control request is answered with the status and counts as no client") {
  TempDir dir;
  auto listener = Listener::Listen(Options(dir.File("server.sock")));
  REQUIRE(listener.ok());
  absl::Status served;
  std::jthread server([&] {
    auto accepted = listener->AcceptAny();
    if (!accepted.ok()) {
      served = accepted.status();
      return;
    }
    auto* control = std::get_if<ControlConnection>(&*accepted);
    if (control == nullptr) {
      served = absl::InternalError("a client instead of a control request");
      return;
    }
    StatusReply reply{};
    reply.server_pid = 99;
    reply.total_memory = 1000;
    CopyText("Device", reply.device_name, sizeof(reply.device_name));
    ClientStatus clients[2] = {};
    clients[0].pid = 11;
    clients[1].memory_bytes = 512;
    CopyText("./app", clients[1].command, sizeof(clients[1].command));
    CopyText("job", clients[1].grant, sizeof(clients[1].grant));
    GrantStatus grants[1] = {};
    CopyText("job", grants[0].name, sizeof(grants[0].name));
    grants[0].memory_limit = 64;
    served = control->SendStatus(reply, clients, grants);
  });
  auto report = QueryStatus(listener->path(), kTestTimeout);
  server.join();
  REQUIRE(served.ok());
  REQUIRE(report.ok());
  CHECK(report->server.server_pid == 99);
  CHECK(report->server.total_memory == 1000);
  CHECK(std::string(report->server.device_name) == "Device");
  REQUIRE(report->clients.size() == 2);
  CHECK(report->clients[0].pid == 11);
  CHECK(report->clients[1].memory_bytes == 512);
  CHECK(std::string(report->clients[1].command) == "./app");
  CHECK(std::string(report->clients[1].grant) == "job");
  REQUIRE(report->grants.size() == 1);
  CHECK(std::string(report->grants[0].name) == "job");
  CHECK(report->grants[0].memory_limit == 64);
}

TEST_CASE("a grant's socket lowers what its clients ask, tells them, and takes no control") {
  TempDir dir;
  ListenerOptions options = Options(dir.File("grant.sock"));
  options.ceiling = ClientCeiling{"job-1", ClientPriority::BestEffort(), 1 << 20, kNoLimit};
  auto listener = Listener::Listen(options);
  REQUIRE(listener.ok());
  struct stat st {};
  REQUIRE(stat(listener->path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);  // --access user
  ClientInfo served;
  {
    std::jthread server([&] {
      auto accepted = listener->Accept();
      if (accepted.ok()) served = accepted->client();
    });
    auto client = ClientConnection::Connect(Client(listener->path()));  // asks for level 5
    server.join();
    REQUIRE(client.ok());
    CHECK_THAT(client->notice(), Catch::Contains("grant 'job-1' gives this job priority"));
  }
  CHECK(served.priority == ClientPriority::BestEffort());
  CHECK(served.memory_limit == 1 << 20);
  CHECK(served.grant == "job-1");

  absl::Status refused;
  std::jthread server([&] { refused = listener->AcceptAny().status(); });
  auto status = QueryStatus(listener->path(), kTestTimeout);
  server.join();
  CHECK(absl::IsPermissionDenied(status.status()));
  CHECK_THAT(std::string(status.status().message()), Catch::Contains("socket of grant 'job-1'"));
  CHECK(absl::IsPermissionDenied(refused));
}

TEST_CASE("the listener's notice reaches the clients it has words for, after a grant's") {
  TempDir dir;
  ListenerOptions options = Options(dir.File("server.sock"));
  options.notice = [](const ClientInfo& client) {
    return client.slowdown_budget ? "budget " + client.slowdown_budget->ToString() : "";
  };
  // The notice a client of `listener` gets.
  const auto notice_for = [](Listener& listener, std::optional<SlowdownBudget> budget) {
    std::jthread server([&] { listener.Accept().IgnoreError(); });
    ConnectOptions client_options = Client(listener.path());
    client_options.slowdown_budget = budget;
    auto client = ClientConnection::Connect(client_options);
    server.join();
    REQUIRE(client.ok());
    return client->notice();
  };
  auto listener = Listener::Listen(options);
  REQUIRE(listener.ok());
  CHECK(notice_for(*listener, SlowdownBudget{0.15, 0.95}) == "budget 15%@p95");
  CHECK(notice_for(*listener, std::nullopt).empty());

  options.path = dir.File("grant.sock");
  options.ceiling = ClientCeiling{"job-1", ClientPriority::BestEffort(), 1 << 20, kNoLimit};
  auto grant = Listener::Listen(options);
  REQUIRE(grant.ok());
  CHECK_THAT(notice_for(*grant, SlowdownBudget{0.15, 0.95}),
             Catch::StartsWith("grant 'job-1' gives this job priority") &&
                 Catch::EndsWith("; budget 15%@p95"));
}

TEST_CASE("the socket's mode and group follow --access") {
  TempDir dir;
  ListenerOptions options = Options(dir.File("server.sock"));
  auto group = PeerAccess::Parse("group:" + std::string(getgrgid(getegid())->gr_name));
  REQUIRE(group.ok());
  options.access = *group;
  auto listener = Listener::Listen(options);
  REQUIRE(listener.ok());
  struct stat st {};
  REQUIRE(stat(listener->path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0660);
  CHECK(st.st_gid == getegid());
}

TEST_CASE("a control request to a clients-only Accept is an error, and no server is named") {
  TempDir dir;
  auto listener = Listener::Listen(Options(dir.File("server.sock")));
  REQUIRE(listener.ok());
  absl::Status accepted;
  std::jthread server([&] { accepted = listener->Accept().status(); });
  CHECK_FALSE(QueryStatus(listener->path(), absl::Seconds(2)).ok());
  server.join();
  CHECK(absl::IsFailedPrecondition(accepted));
  const auto nobody = QueryStatus(dir.File("nobody.sock"), absl::Seconds(2));
  CHECK(absl::IsUnavailable(nobody.status()));
  CHECK(nobody.status().message().find("nobody.sock") != absl::string_view::npos);
}

}  // namespace
}  // namespace tally::ipc
