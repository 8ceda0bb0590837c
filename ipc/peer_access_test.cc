// PeerAccess (who a server admits), ServerTrust (whom a client lets serve it) and ApplyCeiling
// (what a grant's socket fixes for its clients).
#include "ipc/peer_access.h"

#include <grp.h>
#include <stdlib.h>

#include <catch2/catch.hpp>

#include "ipc/connection.h"

namespace tally::ipc {
namespace {

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST_CASE("--access is parsed and says who is served") {
  auto user = PeerAccess::Parse("user", 1000);
  REQUIRE(user.ok());
  CHECK(user->kind() == PeerAccess::Kind::kUser);
  CHECK(user->socket_mode() == 0600);
  CHECK(!user->socket_group());
  CHECK(user->Describe() == "its own user (uid 1000)");

  auto any = PeerAccess::Parse("any", 1000);
  REQUIRE(any.ok());
  CHECK(any->socket_mode() == 0666);
  CHECK(any->Describe() == "every local user");

  // Group 0 (root) exists everywhere.
  const group* root = getgrgid(0);
  REQUIRE(root != nullptr);
  auto members = PeerAccess::Parse(std::string("group:") + root->gr_name, 1000);
  REQUIRE(members.ok());
  CHECK(members->socket_mode() == 0660);
  CHECK(members->socket_group() == gid_t{0});
  CHECK_THAT(members->Describe(), Catch::Contains("group " + std::string(root->gr_name)));

  for (const char* bad : {"", "users", "group:", "group", "everyone", "user:1000"}) {
    CAPTURE(bad);
    auto parsed = PeerAccess::Parse(bad);
    CHECK(absl::IsInvalidArgument(parsed.status()));
    CHECK_THAT(std::string(parsed.status().message()), Catch::Contains("user, group:NAME or any"));
  }
  auto unknown = PeerAccess::Parse("group:no-such-group-of-tally");
  CHECK(absl::IsInvalidArgument(unknown.status()));
  CHECK_THAT(std::string(unknown.status().message()),
             Catch::Contains("no group 'no-such-group-of-tally'"));
}

TEST_CASE("only the owner and root administer a server") {
  auto any = PeerAccess::Parse("any", 1000);
  REQUIRE(any.ok());
  CHECK(any->MayAdminister(1000));
  CHECK(any->MayAdminister(0));
  CHECK(!any->MayAdminister(1001));
}

TEST_CASE("a client trusts its own uid, TALLY_SERVER_UID's, else the service user's") {
  const PeerCredentials mine{1, geteuid(), getegid()};
  const PeerCredentials other{2, geteuid() + 4242, 0};
  {
    ScopedEnv named("TALLY_SERVER_UID", std::to_string(geteuid() + 4242).c_str());
    auto trust = ServerTrust::FromEnvironment();
    REQUIRE(trust.ok());
    CHECK(trust->Check("/s", mine).ok());
    CHECK(trust->Check("/s", other).ok());
    CHECK(absl::IsPermissionDenied(trust->Check("/s", {3, geteuid() + 1, 0})));
  }
  {
    ScopedEnv named("TALLY_SERVER_UID", "root");
    auto trust = ServerTrust::FromEnvironment();
    REQUIRE(trust.ok());
    CHECK(trust->other == uid_t{0});
  }
  {
    ScopedEnv named("TALLY_SERVER_UID", "no-such-user-of-tally");
    auto trust = ServerTrust::FromEnvironment();
    CHECK(absl::IsInvalidArgument(trust.status()));
    CHECK_THAT(std::string(trust.status().message()), Catch::Contains("no-such-user-of-tally"));
  }
  ServerTrust own;  // what a client without any setting trusts when no service user exists
  const absl::Status refused = own.Check("/run/x.sock", other);
  CHECK(absl::IsPermissionDenied(refused));
  CHECK_THAT(std::string(refused.message()), Catch::Contains("/run/x.sock"));
  CHECK_THAT(std::string(refused.message()),
             Catch::Contains("TALLY_SERVER_UID=" + std::to_string(other.uid)));
}

TEST_CASE("a grant's ceiling lowers what a client asks for, and says so") {
  const ClientCeiling ceiling{"job-7", ClientPriority::BestEffort(), 64 << 20, 1 << 20};
  SECTION("a client that asks for nothing gets the grant's priority and limits, silently") {
    ClientInfo client;
    CHECK(ApplyCeiling(ceiling, client).empty());
    CHECK(client.priority == ClientPriority::BestEffort());
    CHECK(client.memory_limit == 64 << 20);
    CHECK(client.pinned_limit == 1 << 20);
    CHECK(client.grant == "job-7");
  }
  SECTION("asking for more is lowered and the client is told why") {
    ClientInfo client;
    client.priority = ClientPriority::High();
    client.memory_limit = uint64_t{1} << 30;
    const std::string notice = ApplyCeiling(ceiling, client);
    CHECK(client.priority == ClientPriority::BestEffort());
    CHECK(client.memory_limit == 64 << 20);
    CHECK_THAT(notice, Catch::Contains("grant 'job-7'"));
    CHECK_THAT(notice, Catch::Contains("priority best-effort, not high"));
    CHECK_THAT(notice, Catch::Contains("67108864 bytes, not 1073741824"));
  }
  SECTION("asking for less keeps what was asked") {
    ClientInfo client;
    client.priority = ClientPriority::Level(-3);
    client.memory_limit = 1 << 20;
    CHECK(ApplyCeiling(ceiling, client).empty());
    CHECK(client.priority == ClientPriority::Level(-3));
    CHECK(client.memory_limit == 1 << 20);
  }
}

}  // namespace
}  // namespace tally::ipc
