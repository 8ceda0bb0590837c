// fork() after CUDA is in use: the child's CUDA calls fail cleanly (it must not share the
// parent's rings), and the parent carries on.
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

int main() {
  int* device;
  CHECK_CUDA(cudaMalloc(&device, 64));
  const pid_t child = fork();
  if (child == 0) {
    int* other = nullptr;
    const cudaError_t error = cudaMalloc(&other, 64);
    _exit(error == cudaErrorInitializationError ? 0 : 10 + static_cast<int>(error % 100));
  }
  int status = 0;
  EXPECT(waitpid(child, &status, 0) == child);
  EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_CUDA(cudaMemset(device, 0, 64));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(device));
  std::printf("fork: the child got an error, the parent carried on\n");
  return 0;
}
