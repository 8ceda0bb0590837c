// `tally-ptx list` and `tally-ptx extract`: what is inside a CUDA binary's fatbins.
#include <cstdio>

#include "ptx_transform/cli/commands.h"

namespace tally::ptx {

int ListCommand(const std::string& binary) {
  std::fprintf(stderr, "tally-ptx: list %s: fatbin reading is not built yet\n", binary.c_str());
  return kExitInvalidInput;
}

int ExtractCommand(const std::string& binary, const std::string&) {
  std::fprintf(stderr, "tally-ptx: extract %s: fatbin reading is not built yet\n",
               binary.c_str());
  return kExitInvalidInput;
}

}  // namespace tally::ptx
