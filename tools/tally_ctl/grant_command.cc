// tally-ctl grant / revoke (grant_command.h).
#include "tools/tally_ctl/grant_command.h"

#include <cstdio>
#include <optional>

#include "common/byte_size.h"
#include "common/client_priority.h"
#include "ipc/control.h"
#include "tools/tally_ctl/command_line.h"
#include "tools/tally_ctl/status_format.h"

namespace tally::tools {
namespace {

struct GrantArgs {
  std::string command;  // grant or revoke
  std::string server;
  bool json = false;
  std::optional<ClientPriority> priority;
  std::optional<uint64_t> memory_limit;
  uint64_t pinned_limit = ipc::kNoLimit;
  std::string name;                 // grant: --name; revoke: the operand
  std::optional<bool> end_clients;  // revoke --clients end|keep
};

// Parses one option's value into `args`; an error message or "".
std::string SetOption(const std::string& option, const std::string& value, GrantArgs& args) {
  if (option == "--server") {
    args.server = value;
  } else if (option == "--priority") {
    auto level = ClientPriority::Parse(value);
    if (!level.ok() || value.empty()) return "--priority wants high, best-effort or a level";
    args.priority = *level;
  } else if (option == "--memory-limit" || option == "--pinned-limit") {
    auto bytes = ParseByteSize(value);
    if (!bytes.ok()) return option + ": " + std::string(bytes.status().message());
    (option == "--memory-limit" ? args.memory_limit.emplace() : args.pinned_limit) = *bytes;
  } else if (option == "--name") {
    args.name = value;
  } else if (option == "--clients") {
    if (value != "end" && value != "keep") return "--clients wants end or keep";
    args.end_clients = value == "end";
  } else {
    return "unknown option '" + option + "'";
  }
  return "";
}

// The options each command takes (besides --server).
bool Takes(const GrantArgs& args, const std::string& option) {
  if (option == "--server") return true;
  if (args.command == "revoke") return option == "--clients";
  return option == "--priority" || option == "--memory-limit" || option == "--pinned-limit" ||
         option == "--name";
}

int Print(const std::string& server, const absl::StatusOr<ipc::GrantReply>& reply, bool json) {
  if (!reply.ok()) return Fail(server, reply.status());
  if (reply->ok == 0) {
    std::fprintf(stderr, "tally-ctl: %s\n", reply->message);
    return 1;
  }
  if (json) {
    std::printf("%s\n", FormatGrantJson(reply->grant).c_str());
  } else {
    std::printf("%s\n", reply->message);
  }
  return 0;
}

}  // namespace

int RunGrantCommand(const std::vector<std::string>& words) {
  GrantArgs args;
  args.command = words[0];
  std::vector<std::string> operands;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--json" && args.command == "grant") {
      args.json = true;
      continue;
    }
    if (!word.starts_with("--")) {
      operands.push_back(word);
      continue;
    }
    const size_t equals = word.find('=');
    const std::string option = word.substr(0, equals);
    if (!Takes(args, option)) return Usage(args.command + " has no option " + option);
    std::string value;
    if (equals != std::string::npos) {
      value = word.substr(equals + 1);
    } else if (i + 1 < words.size()) {
      value = words[++i];
    } else {
      return Usage(option + " wants a value");
    }
    if (const std::string error = SetOption(option, value, args); !error.empty()) {
      return Usage(error);
    }
  }
  if (args.command == "grant") {
    if (!operands.empty()) return Usage("unexpected argument '" + operands[0] + "'");
    if (!args.priority || !args.memory_limit) {
      return Usage("grant wants --priority LEVEL and --memory-limit SIZE");
    }
  } else if (operands.size() != 1) {
    return Usage("revoke wants the grant's NAME");
  } else {
    args.name = operands[0];
  }
  const std::optional<Target> target = ResolveTarget(args.server);
  if (!target) return 1;
  if (args.command == "revoke") {
    return Print(target->server,
                 ipc::RevokeGrant(target->server, args.name, args.end_clients.value_or(false),
                                  kAnswerTimeout, target->trust),
                 false);
  }
  const ipc::ClientCeiling terms{args.name, *args.priority, *args.memory_limit, args.pinned_limit};
  return Print(target->server, ipc::MakeGrant(target->server, terms, kAnswerTimeout, target->trust),
               args.json);
}

}  // namespace tally::tools
