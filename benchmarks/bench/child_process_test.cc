// ChildProcess: the line protocol live mode speaks with its jobs, exit statuses, and that a
// child which does not answer is reported (and stopped) instead of hanging the run.
#include "benchmarks/bench/child_process.h"

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace tally::bench {
namespace {

namespace fs = std::filesystem;

std::string Log(const std::string& name) {
  return (fs::temp_directory_path() / ("tally_child_process_test_" + name + ".log")).string();
}

std::string Contents(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

ChildProcess Shell(const std::string& script, const std::string& name, bool talks = true) {
  auto child = ChildProcess::Start({"/bin/sh", "-c", script}, Log(name), talks);
  REQUIRE(child.ok());
  return std::move(*child);
}

TEST_CASE("A child speaks the handshake and its exit status is reported") {
  ChildProcess child = Shell(
      "echo noise; echo READY; read go; echo FINISHED; read bye; "
      "echo \"$go $bye\" >&2; exit 3",
      "handshake");
  REQUIRE(child.AwaitLine("READY", absl::Seconds(10)).ok());
  REQUIRE(child.SendLine("GO").ok());
  REQUIRE(child.AwaitLine("FINISHED", absl::Seconds(10)).ok());
  REQUIRE(child.SendLine("EXIT").ok());
  auto status = child.Wait(absl::Seconds(10));
  REQUIRE(status.ok());
  CHECK(*status == 3);
  CHECK(Contents(child.log()) == "GO EXIT\n");
}

TEST_CASE("A missing line, a silent child and a hung child are errors, not hangs") {
  ChildProcess quits = Shell("echo READY; exit 0", "quits");
  CHECK(quits.AwaitLine("FINISHED", absl::Seconds(10)).code() ==
        absl::StatusCode::kFailedPrecondition);
  ChildProcess silent = Shell("sleep 30", "silent");
  CHECK(silent.AwaitLine("READY", absl::Milliseconds(100)).code() ==
        absl::StatusCode::kDeadlineExceeded);
  CHECK(silent.Wait(absl::Milliseconds(100)).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
}

TEST_CASE("A server-like child writes its output to the log and stops on SIGTERM") {
  ChildProcess server = Shell("echo started; exec sleep 30", "server", false);
  for (int i = 0; i < 1000 && Contents(server.log()).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(Contents(server.log()) == "started\n");
  auto status = server.Terminate(absl::Seconds(10));
  REQUIRE(status.ok());
  CHECK(*status == 128 + SIGTERM);
}

TEST_CASE("A child gets our environment with the variables it is given") {
  REQUIRE(setenv("TALLY_CHILD_TEST_KEPT", "ours", 1) == 0);
  REQUIRE(setenv("TALLY_CHILD_TEST_REPLACED", "ours", 1) == 0);
  auto child = ChildProcess::Start(
      {"/bin/sh", "-c",
       "echo \"$TALLY_CHILD_TEST_KEPT $TALLY_CHILD_TEST_REPLACED $TALLY_CHILD_TEST_ADDED\""},
      Log("environment"), false, {"TALLY_CHILD_TEST_REPLACED=given", "TALLY_CHILD_TEST_ADDED=new"});
  REQUIRE(child.ok());
  auto status = child->Wait(absl::Seconds(10));
  REQUIRE(status.ok());
  CHECK(*status == 0);
  CHECK(Contents(child->log()) == "ours given new\n");
}

}  // namespace
}  // namespace tally::bench
