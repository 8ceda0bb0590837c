// Device output reaches the program (CUDA C++ Programming Guide, "Formatted Output" and
// "Assertion"): what a kernel prints appears in this process's stdout when a synchronising call
// returns, after what the host printed before it and before what the host prints next; a failed
// device assert's message appears in its stderr, and the launch's error is cudaErrorAssert. The
// lines carry the process id: two copies run at once (e2e_device_output_pair) each see only their
// own kernels' lines. stdout and stderr go to files while the kernels run, so that the program
// reads back exactly what reached them. With TALLY_E2E_NO_ASSERT set the assert is left out:
// where faults are shared (NVIDIA's driver, TALLY_EMU_NO_TENANTS) one copy's assert would end the
// other's context too.
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "check.h"

__global__ void Hello(int pid, int base) {
  printf("device: pid %d thread %d value %d half %.2f %s\n", pid, threadIdx.x, base + threadIdx.x,
         0.5 * threadIdx.x, "ok");
}

// Fails in every thread of every block but the first where x is not 0.
__global__ void Fails(int x) { assert(x * blockIdx.x == 0); }

namespace {

// Sends file descriptor `fd` (stdout or stderr) to a fresh file until Restore.
struct Capture {
  int fd, saved;
  std::string path;
  explicit Capture(int which) : fd(which) {
    char name[] = "/tmp/tally-device-output-XXXXXX";
    const int file = mkstemp(name);
    EXPECT(file >= 0);
    path = name;
    std::fflush(nullptr);
    saved = dup(fd);
    EXPECT(dup2(file, fd) == fd);
    close(file);
  }
  std::vector<std::string> Restore() {
    std::fflush(nullptr);
    EXPECT(dup2(saved, fd) == fd);
    close(saved);
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    unlink(path.c_str());
    return lines;
  }
};

}  // namespace

int main() {
  const int pid = static_cast<int>(getpid());
  Capture out(STDOUT_FILENO);
  std::printf("host: before\n");
  Hello<<<1, 4>>>(pid, 10);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("host: after\n");
  const std::vector<std::string> lines = out.Restore();

  // The host's lines around the device's, the device's in any order of threads.
  EXPECT(lines.size() == 6);
  EXPECT(lines.front() == "host: before");
  EXPECT(lines.back() == "host: after");
  std::vector<std::string> device(lines.begin() + 1, lines.end() - 1);
  std::sort(device.begin(), device.end());
  for (int t = 0; t < 4; ++t) {
    std::ostringstream want;
    want << "device: pid " << pid << " thread " << t << " value " << 10 + t << " half "
         << (t == 0 ? "0.00" : t == 1 ? "0.50" : t == 2 ? "1.00" : "1.50") << " ok";
    EXPECT(device[t] == want.str());
  }

  // Nothing printed, nothing shown: a kernel without printf adds no lines.
  Capture quiet(STDOUT_FILENO);
  Fails<<<1, 1>>>(0);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(quiet.Restore().empty());

  if (std::getenv("TALLY_E2E_NO_ASSERT") != nullptr) {
    std::printf("device_output: kernel printf reached the program in order\n");
    return 0;
  }
  // A failed assert in block 1 (of 2): a message for each of its threads on stderr, as CUDA
  // prints them, and cudaErrorAssert from the synchronising call.
  Capture err(STDERR_FILENO);
  Fails<<<2, 4>>>(1);
  const cudaError_t failed = cudaDeviceSynchronize();
  std::vector<std::string> messages = err.Restore();
  EXPECT(failed == cudaErrorAssert);
  EXPECT(messages.size() == 4);
  std::sort(messages.begin(), messages.end());
  for (int t = 0; t < 4; ++t) {
    const std::string& message = messages[t];
    std::ostringstream who;
    who << "block: [1,0,0], thread: [" << t << ",0,0] Assertion `x * blockIdx.x == 0` failed.";
    if (message.find(who.str()) == std::string::npos) {
      std::fprintf(stderr, "assert message '%s' lacks '%s'\n", message.c_str(), who.str().c_str());
      return 1;
    }
    EXPECT(message.find("device_output.cu") != std::string::npos);
  }
  std::printf("device_output: kernel printf and assert messages reached the program in order\n");
  return 0;
}
