// __managed__ variables are placed all or none: when one of a module's variables cannot be
// placed (here: beyond the page-locked memory the server lets a client register,
// TALLY_CLIENT_PINNED_LIMIT, which the test sets for the server and this program alike), the
// module's kernels fail to launch, and the variables placed before it are freed again: the
// whole limit is still there for the program's own page-locked memory.
#include <cstdlib>

#include "check.h"

__managed__ int before_a = 1;
__managed__ int before_b = 2;
__managed__ char too_big[8 << 20];
__managed__ int after = 3;

__global__ void Touch() {
  before_a += 1;
  before_b += 1;
  too_big[0] = 1;
  after += 1;
}

int main() {
  const char* limit_text = std::getenv("TALLY_CLIENT_PINNED_LIMIT");
  EXPECT(limit_text != nullptr);
  const size_t limit = std::strtoull(limit_text, nullptr, 10);
  EXPECT(limit > 0 && limit < sizeof(too_big));

  Touch<<<1, 1>>>();
  const cudaError_t launched = cudaGetLastError();
  EXPECT(launched != cudaSuccess);
  EXPECT(cudaDeviceSynchronize() == cudaSuccess);  // the failed launch poisons nothing

  // Nothing of the module's variables is left registered: the whole limit is the program's.
  void* block = nullptr;
  CHECK_CUDA(cudaHostAlloc(&block, limit, cudaHostAllocDefault));
  CHECK_CUDA(cudaFreeHost(block));
  std::printf("managed_rollback: a module whose variables could not all be placed left none\n");
  return 0;
}
