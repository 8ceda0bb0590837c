// Expects the whole device to be free except for what this process holds (after another
// client died holding memory).
#include "check.h"

int main() {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::printf("meminfo: %zu of %zu bytes free\n", free_bytes, total_bytes);
  EXPECT(free_bytes == total_bytes);
  return 0;
}
