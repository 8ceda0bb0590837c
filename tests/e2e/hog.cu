// Allocates device memory and page-locked memory, says so on stdout, then waits to be killed:
// the server must give the memory back (and unregister the page-locked blocks) when the process
// dies without freeing it.
#include <unistd.h>

#include "check.h"

int main() {
  void* memory;
  CHECK_CUDA(cudaMalloc(&memory, size_t{256} << 20));
  CHECK_CUDA(cudaMemset(memory, 1, 4096));
  void* pinned[2];
  CHECK_CUDA(cudaMallocHost(&pinned[0], 4096));
  CHECK_CUDA(cudaHostAlloc(&pinned[1], size_t{1} << 20, cudaHostAllocMapped));
  CHECK_CUDA(cudaMemcpyAsync(pinned[1], memory, 4096, cudaMemcpyDeviceToHost, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("READY\n");
  std::fflush(stdout);
  sleep(60);  // the test kills us long before
  return 1;
}
