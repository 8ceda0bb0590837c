// The address range the server picks for page-locked memory is already used by the program:
// page-locked allocations fail clearly (nothing of the program's is replaced), everything else
// works.
#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include "check.h"

int main() {
  // Where servers put their clients' host regions (ipc/segment.h: [kHostRegionBase,
  // kHostRegionLimit), a slot picked at random), before the first CUDA call connects: all of it,
  // 16 TiB of address space (no memory: MAP_NORESERVE, untouched pages).
  void* const wanted = reinterpret_cast<void*>(uintptr_t{0x2000} << 32);
  const size_t size = (size_t{0x3000} - size_t{0x2000}) << 32;
  void* taken = mmap(wanted, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  EXPECT(taken == wanted);
  static_cast<char*>(taken)[12345] = 42;

  void* pinned = nullptr;
  EXPECT(cudaMallocHost(&pinned, 4096) == cudaErrorMemoryAllocation);
  EXPECT(cudaGetLastError() == cudaErrorMemoryAllocation);
  EXPECT(static_cast<char*>(taken)[12345] == 42);  // still ours

  int host[64], back[64];
  for (int i = 0; i < 64; ++i) host[i] = i * 3;
  int* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, sizeof host));
  CHECK_CUDA(cudaMemcpy(device, host, sizeof host, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(back, device, sizeof back, cudaMemcpyDeviceToHost));
  EXPECT(std::memcmp(host, back, sizeof host) == 0);
  CHECK_CUDA(cudaFree(device));
  std::printf("region_taken: page-locked memory refused clearly, the rest works\n");
  return 0;
}
