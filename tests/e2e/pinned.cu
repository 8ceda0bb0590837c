// Page-locked host memory shared with the server: mapped memory that kernels read and write in
// place (cudaHostAllocMapped, cudaHostGetDevicePointer, cudaSetDeviceFlags(cudaDeviceMapHost)),
// and asynchronous copies from and to cudaMallocHost memory ordered with kernels on a stream.
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "check.h"

__global__ void Scale(const int* in, int* out, int factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * factor + i;
}

__global__ void AddOne(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

int main() {
  CHECK_CUDA(cudaSetDeviceFlags(cudaDeviceMapHost));
  unsigned int device_flags = 0;
  CHECK_CUDA(cudaGetDeviceFlags(&device_flags));
  EXPECT((device_flags & cudaDeviceMapHost) != 0);
  const int n = 1000;

  // Mapped memory: the kernel reads and writes host memory through the device pointer, which
  // (unified addressing) is the host pointer.
  int* mapped_in = nullptr;
  int* mapped_out = nullptr;
  CHECK_CUDA(cudaHostAlloc(&mapped_in, n * sizeof(int), cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&mapped_out, n * sizeof(int),
                           cudaHostAllocMapped | cudaHostAllocWriteCombined));
  unsigned int flags = 0;
  CHECK_CUDA(cudaHostGetFlags(&flags, mapped_out));
  EXPECT(flags == (cudaHostAllocMapped | cudaHostAllocWriteCombined));
  EXPECT(reinterpret_cast<uintptr_t>(mapped_in) % 4096 == 0);
  for (int i = 0; i < n; ++i) mapped_in[i] = 3 * i - 500;
  std::memset(mapped_out, 0, n * sizeof(int));
  int *device_in = nullptr, *device_out = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_in), mapped_in, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_out), mapped_out + 10, 0));
  EXPECT(device_in == mapped_in && device_out == mapped_out + 10);
  Scale<<<(n + 127) / 128, 128>>>(device_in, mapped_out, 7, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i) EXPECT(mapped_out[i] == (3 * i - 500) * 7 + i);
  // The host writes, the kernel sees it, and the other way round again.
  mapped_out[5] = 41;
  AddOne<<<(n + 127) / 128, 128>>>(mapped_out, n);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(mapped_out[5] == 42 && mapped_out[6] == (3 * 6 - 500) * 7 + 6 + 1);

  // Asynchronous copies from and to page-locked memory, ordered on a stream with a kernel and
  // a host function that checks the data has landed when it runs.
  int* pinned = nullptr;
  int* result = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, n * sizeof(int)));
  CHECK_CUDA(cudaMallocHost(&result, n * sizeof(int)));
  for (int i = 0; i < n; ++i) {
    pinned[i] = i * i;
    result[i] = -1;
  }
  int* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, n * sizeof(int)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaMemcpyAsync(device, pinned, n * sizeof(int), cudaMemcpyHostToDevice, stream));
  AddOne<<<(n + 127) / 128, 128, 0, stream>>>(device, n);
  CHECK_CUDA(cudaMemcpyAsync(result, device, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
  struct Seen {
    const int* data;
    int value;
  } seen{result, -1};
  CHECK_CUDA(cudaLaunchHostFunc(
      stream, [](void* p) { static_cast<Seen*>(p)->value = static_cast<Seen*>(p)->data[999]; },
      &seen));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT(seen.value == 999 * 999 + 1);
  for (int i = 0; i < n; ++i) EXPECT(result[i] == i * i + 1);

  // cudaMemcpyDefault between page-locked and device memory, and pinned to pinned.
  CHECK_CUDA(cudaMemcpy(device, mapped_in, n * sizeof(int), cudaMemcpyDefault));
  CHECK_CUDA(cudaMemcpy(result, device, n * sizeof(int), cudaMemcpyDefault));
  for (int i = 0; i < n; ++i) EXPECT(result[i] == 3 * i - 500);
  CHECK_CUDA(cudaMemcpy(result, pinned, n * sizeof(int), cudaMemcpyDefault));
  for (int i = 0; i < n; ++i) EXPECT(result[i] == i * i);
  // Partial ranges of a block, and a kernel writing into cudaMallocHost memory (mapped too).
  CHECK_CUDA(cudaMemcpy(result + 100, device + 5, 10 * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(result[100] == 3 * 5 - 500 && result[109] == 3 * 14 - 500 && result[110] == 110 * 110);
  AddOne<<<(n + 127) / 128, 128>>>(result, n);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT(result[0] == 1 && result[999] == 999 * 999 + 1);

  // Errors: ranges past a block, pointers that are not page-locked memory.
  EXPECT(cudaMemcpy(device, pinned + n - 1, 2 * sizeof(int), cudaMemcpyHostToDevice) ==
         cudaErrorInvalidValue);
  int on_stack = 0;
  void* ignored = nullptr;
  EXPECT(cudaHostGetDevicePointer(&ignored, &on_stack, 0) == cudaErrorInvalidValue);
  EXPECT(cudaFreeHost(device) == cudaErrorInvalidValue);
  EXPECT(cudaFree(pinned) == cudaErrorInvalidValue);
  EXPECT(cudaHostAlloc(&ignored, 64, 0x100) == cudaErrorInvalidValue);
  cudaGetLastError();

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFreeHost(result));
  CHECK_CUDA(cudaFreeHost(mapped_in));
  CHECK_CUDA(cudaFreeHost(mapped_out));
  EXPECT(cudaFreeHost(mapped_out) == cudaErrorInvalidValue);  // freed already
  cudaGetLastError();
  // Freed blocks give their pages back to the system (all but the allocator's bookkeeping in
  // the first page), and are reused.
  const size_t big = size_t{8} << 20;
  char* touched = nullptr;
  CHECK_CUDA(cudaMallocHost(&touched, big));
  std::memset(touched, 1, big);
  std::vector<unsigned char> pages(big / 4096);
  const auto resident = [&] {
    EXPECT(mincore(touched, big, pages.data()) == 0);
    return std::count_if(pages.begin(), pages.end(), [](unsigned char p) { return p & 1; });
  };
  EXPECT(resident() == static_cast<long>(pages.size()));
  CHECK_CUDA(cudaFreeHost(touched));
  EXPECT(resident() <= 1);
  void* again = nullptr;
  CHECK_CUDA(cudaMallocHost(&again, n * sizeof(int)));
  CHECK_CUDA(cudaFreeHost(again));
  void* none = &on_stack;
  CHECK_CUDA(cudaMallocHost(&none, 0));
  EXPECT(none == nullptr);
  std::printf("pinned: mapped memory used by kernels, async copies with page-locked memory\n");
  return 0;
}
