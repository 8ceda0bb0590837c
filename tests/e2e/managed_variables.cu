// __managed__ variables: one variable for host code and kernels, at one address. A kernel
// launched before the program's first host access sees the initial value; each side sees what
// the other wrote; kernels see the address the host sees; cudaDeviceReset gives the variables
// their initial values again. Run twice at once, each process has its own variables.
#include <cstdint>

#include "check.h"

__managed__ int counter = 5;
__managed__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__managed__ int first_seen = 42;
__managed__ uint64_t seen_address;

__global__ void ReadFirst(int* out) {
  *out = first_seen;
  first_seen = 7;
}

__global__ void Add(int n) {
  atomicAdd(&counter, n);
  table[threadIdx.x] *= 2.0f;
}

__global__ void RecordAddress() { seen_address = reinterpret_cast<uint64_t>(&counter); }

int main() {
  // Before any host access: the kernel reads the initial value, the host then its write.
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(int)));
  ReadFirst<<<1, 1>>>(out);
  CHECK_CUDA(cudaDeviceSynchronize());
  int read = 0;
  CHECK_CUDA(cudaMemcpy(&read, out, sizeof read, cudaMemcpyDeviceToHost));
  EXPECT(read == 42);
  EXPECT(first_seen == 7);

  counter += 1;
  table[1] = 10.0f;
  Add<<<1, 4>>>(3);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(counter == 6 + 4 * 3);  // every thread adds
  EXPECT(table[0] == 2.0f && table[1] == 20.0f && table[2] == 6.0f && table[3] == 8.0f);

  RecordAddress<<<1, 1>>>();
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(seen_address == reinterpret_cast<uint64_t>(&counter));

  // A pointer to a managed variable is managed memory, usable as such.
  cudaPointerAttributes attributes{};
  CHECK_CUDA(cudaPointerGetAttributes(&attributes, &counter));
  EXPECT(attributes.type == cudaMemoryTypeManaged);

  CHECK_CUDA(cudaDeviceReset());
  EXPECT(counter == 5);
  EXPECT(table[1] == 2.0f);
  Add<<<1, 4>>>(1);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(counter == 5 + 4 * 1 && table[3] == 8.0f);
  std::printf("managed variables: ok\n");
  return 0;
}
