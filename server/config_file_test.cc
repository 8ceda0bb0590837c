// tally-server's configuration file: the parser (comments, quotes, errors with the file and
// line), the file between environment and flags in ParseOptions, and what a reload compares.
#include "common/config_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "server/options.h"
#include "server/reload.h"

namespace tally::server {
namespace {

TEST_CASE("a configuration file: NAME=VALUE lines, comments, blank lines, quoted values") {
  const auto entries = ParseConfig("f.env",
                                   "# Tally on this node\n"
                                   "\n"
                                   "TALLY_MAX_CLIENTS=32\n"
                                   "  TALLY_POLICY = fifo  \n"
                                   "TALLY_CLIENT_MEMORY_LIMIT=\"4G\"\n"
                                   "TALLY_PROFILE_CACHE='/var/cache/tally/p.json'\n"
                                   "TALLY_SOCKET=\n");
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 5);
  CHECK((*entries)[0].line == 3);
  CHECK((*entries)[0].name == "TALLY_MAX_CLIENTS");
  CHECK((*entries)[0].value == "32");
  CHECK((*entries)[1].name == "TALLY_POLICY");
  CHECK((*entries)[1].value == "fifo");
  CHECK((*entries)[2].value == "4G");
  CHECK((*entries)[3].value == "/var/cache/tally/p.json");
  CHECK((*entries)[4].value.empty());
}

TEST_CASE("a bad configuration line is an error naming the file and the line") {
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"TALLY_MAX_CLIENTS=1\nno equals sign\n", "f.env:2: expected NAME=VALUE"},
           {"\n\n9LIVES=1\n", "f.env:3: '9LIVES' is not a variable name"},
           {"TALLY_POLICY=\"fifo\n", "f.env:1: unterminated quote"},
           {"=3\n", "f.env:1: '' is not a variable name"}}) {
    INFO(text);
    const auto entries = ParseConfig("f.env", text);
    REQUIRE_FALSE(entries.ok());
    CHECK(entries.status().message() == why);
  }
  CHECK(ReadConfigFile("/nonexistent/tally.env")
            .status()
            .message()
            .find("cannot read the configuration file /nonexistent/tally.env") == 0);
}

// A configuration file for one test, removed at its end.
class ConfigFile {
 public:
  explicit ConfigFile(const std::string& text) {
    char name[] = "/tmp/tally-config-test-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path_ = name;
    Write(text);
  }
  ~ConfigFile() { std::remove(path_.c_str()); }
  void Write(const std::string& text) const { std::ofstream(path_) << text; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

absl::StatusOr<std::optional<ServerOptions>> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "tally-server");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseOptions(static_cast<int>(argv.size()), argv.data(), "emu.so");
}

TEST_CASE("--config: the file overrides the environment, flags override the file") {
  const ConfigFile file("TALLY_MAX_CLIENTS=32\nTALLY_MAX_STREAMS=8\nTALLY_POLICY=fifo\n");
  setenv("TALLY_MAX_CLIENTS", "16", 1);
  setenv("TALLY_MAX_EVENTS", "7", 1);
  auto options = Parse({"--config", file.path(), "--max-streams=9"});
  unsetenv("TALLY_MAX_CLIENTS");
  unsetenv("TALLY_MAX_EVENTS");
  REQUIRE(options.ok());
  CHECK((*options)->config_path == file.path());
  CHECK((*options)->max_clients == 32);        // the file over the environment
  CHECK((*options)->limits.max_events == 7);   // the environment where the file is silent
  CHECK((*options)->limits.max_streams == 9);  // the flag over the file
  CHECK((*options)->policy == "fifo");
  setenv("TALLY_CONFIG", file.path().c_str(), 1);
  options = Parse({});
  unsetenv("TALLY_CONFIG");
  REQUIRE(options.ok());
  CHECK((*options)->max_clients == 32);
}

TEST_CASE("--config: unknown names and bad values name the file, the line and the variable") {
  const ConfigFile file("TALLY_MAX_CLIENTS=32\nTALLY_MAX_CLIENT=3\n");
  auto options = Parse({"--config=" + file.path()});
  REQUIRE_FALSE(options.ok());
  CHECK(options.status().message() ==
        file.path() + ":2: TALLY_MAX_CLIENT is not a setting of tally-server (see --help)");
  file.Write("TALLY_MAX_CLIENTS=-1\n");
  options = Parse({"--config=" + file.path()});
  REQUIRE_FALSE(options.ok());
  CHECK(options.status().message() ==
        file.path() + ":1: TALLY_MAX_CLIENTS wants a positive integer, not '-1'");
  file.Write("TALLY_CONFIG=/elsewhere\n");
  CHECK_FALSE(Parse({"--config=" + file.path()}).ok());
  CHECK_FALSE(Parse({"--config=/nonexistent/tally.env"}).ok());
}

TEST_CASE("a reload applies the limits, caps and timeouts; other changes wait for a restart") {
  ServerOptions running;
  ServerOptions read = running;
  CHECK(CompareOptions(running, read).applied.empty());
  read.max_clients = 8;
  read.limits.memory_limit = uint64_t{1} << 30;
  read.max_client_priority = 0;
  read.policy = "fifo";
  read.min_idle_ms = 5;
  const OptionChanges changes = CompareOptions(running, read);
  CHECK(changes.applied == std::vector<std::string>{"--max-client-priority unset -> 0",
                                                    "--max-clients 64 -> 8",
                                                    "--client-memory-limit none -> 1073741824"});
  CHECK(changes.need_restart ==
        std::vector<std::string>{"--policy priority -> fifo", "--min-idle-ms unset -> 5"});
}

}  // namespace
}  // namespace tally::server
