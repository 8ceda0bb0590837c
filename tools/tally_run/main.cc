// tally-run: runs a CUDA program with its runtime calls served by tally-server. Sets LD_PRELOAD
// to libtally_client.so, TALLY_PRIORITY, TALLY_SLOWDOWN_BUDGET and TALLY_SERVER (and, without an
// NVIDIA driver, puts a libcuda.so.1 that is the shim on LD_LIBRARY_PATH: driver_library.h), then
// execs the program; refuses programs whose CUDA runtime is linked statically, which the shim could
// not intercept.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "common/built_file.h"
#include "common/byte_size.h"
#include "common/client_priority.h"
#include "common/slowdown_budget.h"
#include "tools/tally_run/cudart_linkage.h"
#include "tools/tally_run/driver_library.h"
#include "tools/tally_run/server_choice.h"

namespace {

constexpr char kUsage[] =
    "Usage: tally-run [--priority high|best-effort|N] [--memory-limit SIZE]\n"
    "                 [--slowdown-budget PCT[@pN]]\n"
    "                 [--server PATH | --device auto|INDEX|UUID [--verbose]] -- program [args...]\n"
    "Runs a CUDA program (built with nvcc -cudart shared) on the GPU shared by tally-server.\n\n"
    "  --priority P   high, best-effort (default) or an integer; higher is more important\n"
    "                 [sets TALLY_PRIORITY]\n"
    "  --memory-limit SIZE\n"
    "                 device memory the program may allocate, e.g. 512M or 4G: the device\n"
    "                 looks that large to it (cudaMemGetInfo, the device's total memory). Only\n"
    "                 lowers the server's limit for the program (tally-server\n"
    "                 --client-memory-limit), never raises it [sets TALLY_MEMORY_LIMIT]\n"
    "  --slowdown-budget PCT[@pN]\n"
    "                 under tally-server --policy priority-budget, how much longer than alone\n"
    "                 the program's busy periods (from work arriving to its queue going\n"
    "                 idle: a request) may take at a percentile of them (p99 unless given),\n"
    "                 so that background work may run beside it: 10%, 20%@p95; 0% holds the\n"
    "                 background as --policy priority does (default: the server's\n"
    "                 --slowdown-budget). It counts only while the program is in the\n"
    "                 foreground (the most important connected client); below, it is kept\n"
    "                 for when the program is foreground again (a more important client\n"
    "                 leaves, tally-ctl priority raises it). Under another policy it has no\n"
    "                 effect, and the program says so on stderr [sets TALLY_SLOWDOWN_BUDGET]\n"
    "  --server PATH  the server's socket (default: TALLY_SERVER, else the one server socket\n"
    "                 in the run directory: TALLY_RUN_DIR, else $XDG_RUNTIME_DIR/tally, else\n"
    "                 /tmp/tally-$UID) [sets TALLY_SERVER]\n"
    "  --device auto|INDEX|UUID\n"
    "                 picks one of the servers in the run directory (one per GPU): the one\n"
    "                 serving that device ordinal or UUID (GPU-..., as nvidia-smi -L prints it),\n"
    "                 or with auto by this rule: among the servers that accept clients (not\n"
    "                 draining, below their --max-clients) and have the job's --memory-limit\n"
    "                 free (if none has, among all that accept clients), the one with the\n"
    "                 fewest clients at or above the job's priority, then the most free device\n"
    "                 memory, then the lowest device ordinal [sets TALLY_SERVER]\n"
    "  --verbose      says on stderr which server --device chose and why\n"
    "  --help         show this help\n\n"
    "The shim loaded is TALLY_CLIENT_LIBRARY when set, else the libtally_client.so installed\n"
    "with tally-run (in a build tree, the build's). Tally's stand-ins for cuBLAS, cuBLASLt\n"
    "and cuDNN (libcublas.so.13, libcublasLt.so.13, libcudnn.so.9) come first on the\n"
    "program's LD_LIBRARY_PATH, so that it uses them instead of the vendor libraries: those\n"
    "in the folder TALLY_LIBRARY_DIR names when set, else those installed with tally-run.\n";

// Sets a colon-separated list variable to `first`, then what it held. LD_PRELOAD: the shim's
// symbols must win over any other preloaded library's; LD_LIBRARY_PATH: Tally's folders are
// searched first.
void PrependToVariable(const char* name, const std::string& first) {
  std::string value = first;
  if (const char* existing = std::getenv(name); existing != nullptr && *existing != '\0') {
    value += std::string(":") + existing;
  }
  setenv(name, value.c_str(), 1);
}

// The variable's value when set, else the build's file or the installed one.
std::string VariableOrBuiltFile(const char* name, const tally::BuiltFile& file) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : tally::LocateBuiltFile(file);
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "tally-run: %s\n", message.c_str());
  return 2;
}

// Explains a refusal, or returns true when the program may run under the shim.
bool CheckLinkage(const std::string& program) {
  absl::StatusOr<std::string> path = tally::tools::FindExecutable(program);
  if (!path.ok()) return true;  // execvp reports it
  std::ifstream file(*path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto linkage = tally::tools::DetectCudartLinkage(
      {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  if (!linkage.ok()) {
    std::fprintf(stderr, "tally-run: warning: cannot inspect %s (%s); running it anyway\n",
                 path->c_str(), std::string(linkage.status().message()).c_str());
    return true;
  }
  if (*linkage != tally::tools::CudartLinkage::kStatic) return true;
  std::fprintf(stderr,
               "tally-run: %s links the CUDA runtime statically (nvcc's default), so its CUDA "
               "calls cannot be shared through Tally and it would use the GPU directly.\n"
               "Rebuild it with `nvcc -cudart shared` (CMake: "
               "set CUDA_RUNTIME_LIBRARY Shared) and run it again.\n",
               path->c_str());
  return false;
}

// What the job asks for, as --device auto weighs it: the flags, else the environment the
// program would see.
tally::tools::JobDemand JobOf(const std::string& priority, const std::string& memory_limit) {
  const auto flag_or_variable = [](const std::string& flag, const char* variable) {
    const char* set = std::getenv(variable);
    return flag.empty() && set != nullptr ? std::string(set) : flag;
  };
  tally::tools::JobDemand job;
  if (auto parsed = tally::ClientPriority::Parse(flag_or_variable(priority, "TALLY_PRIORITY"));
      parsed.ok()) {
    job.priority = *parsed;
  }
  if (auto bytes = tally::ParseByteSize(flag_or_variable(memory_limit, "TALLY_MEMORY_LIMIT"));
      bytes.ok()) {
    job.memory_bytes = *bytes;
  }
  return job;
}

}  // namespace

int main(int argc, char** argv) {
  std::string priority;
  std::string memory_limit;
  std::string slowdown_budget;
  bool slowdown_budget_given = false;  // if only as "" (refused)
  std::string server;
  std::string device;
  bool verbose = false;
  // The options with a value, as `--NAME VALUE` or `--NAME=VALUE`.
  struct ValueOption {
    std::string_view name;
    std::string* value;
    bool* given = nullptr;
  };
  const ValueOption value_options[] = {
      {"--priority", &priority},
      {"--server", &server},
      {"--device", &device},
      {"--memory-limit", &memory_limit},
      {"--slowdown-budget", &slowdown_budget, &slowdown_budget_given}};
  int i = 1;
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    const ValueOption* option = nullptr;
    std::string_view value;
    for (const ValueOption& candidate : value_options) {
      if (arg == candidate.name) {
        if (i + 1 == argc) return Fail(std::string(arg) + " needs a value (see --help)");
        option = &candidate;
        value = argv[++i];
        break;
      }
      if (arg.starts_with(candidate.name) && arg.substr(candidate.name.size()).starts_with('=')) {
        option = &candidate;
        value = arg.substr(candidate.name.size() + 1);
        break;
      }
    }
    if (option != nullptr) {
      *option->value = value;
      if (option->given != nullptr) *option->given = true;
    } else if (arg == "--verbose") {
      verbose = true;
    } else if (arg.starts_with("-")) {
      return Fail(std::string("unknown option ") + std::string(arg) + " (see --help)");
    } else {
      break;  // the program, without a `--` before it
    }
  }
  if (i >= argc) return Fail("no program given (see --help)");
  if (!priority.empty()) {
    if (auto parsed = tally::ClientPriority::Parse(priority); !parsed.ok()) {
      return Fail("--priority: " + std::string(parsed.status().message()));
    }
  }
  if (!memory_limit.empty()) {
    absl::StatusOr<uint64_t> bytes = tally::ParseByteSize(memory_limit);
    if (!bytes.ok() || *bytes == 0) {
      return Fail("--memory-limit: " + (bytes.ok() ? std::string("must be more than 0 bytes")
                                                   : std::string(bytes.status().message())));
    }
  }
  if (slowdown_budget_given) {
    if (auto parsed = tally::SlowdownBudget::Parse(slowdown_budget); !parsed.ok()) {
      return Fail("--slowdown-budget: " + std::string(parsed.status().message()));
    }
  }
  if (verbose && device.empty()) return Fail("--verbose explains --device's choice; give --device");
  if (!device.empty()) {
    if (!server.empty()) return Fail("--server and --device name the server twice; give one");
    absl::StatusOr<std::string> chosen =
        tally::tools::SelectServer(device, JobOf(priority, memory_limit), verbose);
    if (!chosen.ok()) return Fail(std::string(chosen.status().message()));
    server = *chosen;
  }
  if (!CheckLinkage(argv[i])) return 3;

  const std::string shim_path = VariableOrBuiltFile(
      "TALLY_CLIENT_LIBRARY",
      {TALLY_DEFAULT_CLIENT_LIBRARY, TALLY_BUILD_EXECUTABLE_DIR, TALLY_INSTALLED_CLIENT_LIBRARY});
  if (!tally::tools::DriverLibraryInstalled()) {
    // Before LD_PRELOAD changes: the directory is made for the shim alone.
    absl::StatusOr<std::string> driver_dir = tally::tools::DriverShimDirectory(shim_path);
    if (!driver_dir.ok()) {
      return Fail(std::string("cannot provide libcuda.so.1 for the program: ") +
                  std::string(driver_dir.status().message()));
    }
    PrependToVariable("LD_LIBRARY_PATH", *driver_dir);
  }
  // The library stand-ins (libcublas.so.13, ...) before any other folder, so that the program
  // binds to them and not to the vendor libraries, which cannot run under the shim.
  const std::string stand_ins = VariableOrBuiltFile(
      "TALLY_LIBRARY_DIR",
      {TALLY_DEFAULT_LIBRARY_DIR, TALLY_BUILD_EXECUTABLE_DIR, TALLY_INSTALLED_LIBRARY_DIR});
  if (!stand_ins.empty()) PrependToVariable("LD_LIBRARY_PATH", stand_ins);
  PrependToVariable("LD_PRELOAD", shim_path);
  if (!priority.empty()) setenv("TALLY_PRIORITY", priority.c_str(), 1);
  if (!memory_limit.empty()) setenv("TALLY_MEMORY_LIMIT", memory_limit.c_str(), 1);
  if (slowdown_budget_given) setenv("TALLY_SLOWDOWN_BUDGET", slowdown_budget.c_str(), 1);
  if (!server.empty()) setenv("TALLY_SERVER", server.c_str(), 1);
  execvp(argv[i], argv + i);
  return Fail(std::string("cannot run ") + argv[i] + ": " + std::strerror(errno));
}
