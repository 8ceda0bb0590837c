// The subcommands of tally-ptx; each returns the process exit status.
#pragma once

#include <string>

namespace tally::ptx {

constexpr int kExitOk = 0;
constexpr int kExitInvalidInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitPtxasRejected = 3;

struct CommandOptions {
  std::string output_dir;
  std::string arch;
  bool slice = false;
  bool ptb = false;
  bool fence = false;
};

int ListCommand(const std::string& binary);
int ExtractCommand(const std::string& binary, const std::string& output_dir);
int PrintCommand(const std::string& ptx_file);
int CheckCommand(const std::string& ptx_file, const std::string& arch);
int TransformCommand(const std::string& ptx_file, bool slice, bool ptb, bool fence);

}  // namespace tally::ptx
