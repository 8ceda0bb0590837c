// tally-ptx: inspect CUDA binaries' fatbins and round-trip PTX through Tally's front end.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ptx_transform/cli/commands.h"

namespace {

constexpr const char kUsage[] = R"(Usage: tally-ptx COMMAND [ARGS]

Inspect the PTX inside CUDA binaries and round-trip it through Tally's PTX front end.

Commands:
  list BINARY              fatbins, entries (kind, arch, size, compression) and, for PTX
                           entries, every kernel with its parameter layout
  extract BINARY -o DIR    write each PTX entry to DIR as a .ptx file
  print FILE.ptx           parse and print the module (`-` reads standard input)
  check FILE.ptx           parse, print, parse the output again (must give the same IR) and
                           assemble the printed module with ptxas when one is found
                           ($TALLY_PTXAS, $TALLY_CUDA_ROOT/bin, /usr/local/cuda/bin, PATH)
  transform FILE.ptx [--slice] [--ptb] [--fence]
                           add sliced and/or preemptible (PTB) variants of every kernel that
                           can be transformed safely (both when neither flag is given); the
                           module goes to standard output, a report per kernel (made, or why
                           not) to standard error. These are the forms that
                           `tally-server --validate=FORM` runs programs in. With --fence,
                           kernels are first fenced in place (every global access confined
                           to the ranges of a FenceParams parameter appended to each kernel)

Options:
  -o, --output DIR         output directory for `extract` (created if missing)
  --arch sm_XX             architecture for ptxas in `check` (default: the module's .target)
  --slice, --ptb           forms to make in `transform`
  --fence                  fence the kernels in `transform`
  -h, --help               show this help

BINARY is a host executable or shared library with embedded fatbins, or a raw fatbin file.
Exit status: 0 success, 1 invalid input (diagnostics on stderr), 2 usage error,
3 ptxas rejected the printed PTX.
)";

int UsageError(const char* message) {
  std::fprintf(stderr, "tally-ptx: %s\nTry 'tally-ptx --help'.\n", message);
  return tally::ptx::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  tally::ptx::CommandOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "-o" || arg == "--output" || arg == "--arch") {
      if (i + 1 >= argc) return UsageError(("missing value for " + arg).c_str());
      (arg == "--arch" ? options.arch : options.output_dir) = argv[++i];
    } else if (arg == "--slice") {
      options.slice = true;
    } else if (arg == "--ptb") {
      options.ptb = true;
    } else if (arg == "--fence") {
      options.fence = true;
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      return UsageError(("unknown option " + arg).c_str());
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.empty()) return UsageError("missing command");
  const std::string& command = positional[0];
  if (positional.size() != 2) return UsageError(("'" + command + "' takes one file").c_str());
  const std::string& file = positional[1];
  if (command == "list") return tally::ptx::ListCommand(file);
  if (command == "extract") {
    if (options.output_dir.empty()) return UsageError("extract needs -o DIR");
    return tally::ptx::ExtractCommand(file, options.output_dir);
  }
  if (command == "print") return tally::ptx::PrintCommand(file);
  if (command == "check") return tally::ptx::CheckCommand(file, options.arch);
  if (command == "transform") {
    bool both = !options.slice && !options.ptb;
    return tally::ptx::TransformCommand(file, options.slice || both, options.ptb || both,
                                        options.fence);
  }
  return UsageError(("unknown command '" + command + "'").c_str());
}
