// Mapped host memory (zero-copy): memory from cudaHostAlloc(cudaHostAllocMapped) and application
// memory registered with cudaHostRegister (Mapped, Portable, Default, ReadOnly), read and
// written by kernels through cudaHostGetDevicePointer's pointer while the host sees every change
// at its own pointer, with no copies; the flags cudaHostGetFlags reports; the errors CUDA
// documents for overlapping and unregistered ranges; unregistering gives the memory back with
// its contents; the driver API's cuMemHostRegister does the same.
#include <cuda.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "add_one_ptx.h"
#include "check.h"
#include "check_cu.h"
#include "driver_setup.h"

__global__ void AddIndex(int* data, int n, int round) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += i + round;
}

__global__ void Sum(const int* data, int n, int* sum) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(sum, data[i]);
}

template <typename T>
T* DevicePointer(T* host) {
  void* device = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(&device, host, 0));
  return static_cast<T*>(device);
}

// Kernels update `host` through its device pointer; the host reads the results in place and
// writes values the next kernel reads.
void ZeroCopyRounds(int* host, int n, const char* what) {
  int* device = DevicePointer(host);
  for (int i = 0; i < n; ++i) host[i] = 1000 * i;
  for (int round = 0; round < 3; ++round) {
    AddIndex<<<(n + 127) / 128, 128>>>(device, n, round);
    CHECK_CUDA(cudaDeviceSynchronize());
    for (int i = 0; i < n; ++i) {
      const int expected = 1000 * i + (round + 1) * i + round * (round + 1) / 2;
      if (host[i] != expected) {
        std::fprintf(stderr, "%s: round %d element %d is %d, expected %d\n", what, round, i,
                     host[i], expected);
        std::exit(1);
      }
    }
  }
  for (int i = 0; i < n; ++i) host[i] = i % 7;
  int* sum = nullptr;
  CHECK_CUDA(cudaMalloc(&sum, sizeof(int)));
  CHECK_CUDA(cudaMemset(sum, 0, sizeof(int)));
  Sum<<<(n + 127) / 128, 128>>>(device, n, sum);
  int total = 0, expected = 0;
  CHECK_CUDA(cudaMemcpy(&total, sum, sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) expected += i % 7;
  EXPECT(total == expected);
  CHECK_CUDA(cudaFree(sum));
}

int main() {
  // Whether the device may use the host pointer of registered memory decides which pointer
  // kernels get; cudaHostGetDevicePointer's is valid either way (CUDA Runtime API).
  int host_pointer_ok = -1;
  CHECK_CUDA(
      cudaDeviceGetAttribute(&host_pointer_ok, cudaDevAttrCanUseHostPointerForRegisteredMem, 0));
  EXPECT(host_pointer_ok == 0 || host_pointer_ok == 1);

  // cudaHostAlloc: the flags as given, the same pointer for the device.
  const int n = 3000;
  int* pinned = nullptr;
  CHECK_CUDA(cudaHostAlloc(&pinned, n * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  unsigned flags = 0;
  CHECK_CUDA(cudaHostGetFlags(&flags, pinned + 10));
  EXPECT(flags == (cudaHostAllocMapped | cudaHostAllocPortable));
  EXPECT(DevicePointer(pinned) == pinned);
  ZeroCopyRounds(pinned, n, "cudaHostAlloc(cudaHostAllocMapped)");

  // Registered heap memory, not page-aligned, with each flag.
  const unsigned kFlags[] = {cudaHostRegisterMapped, cudaHostRegisterPortable,
                             cudaHostRegisterDefault,
                             cudaHostRegisterMapped | cudaHostRegisterPortable};
  for (unsigned register_flags : kFlags) {
    std::vector<int> storage(n + 64);
    int* data = storage.data() + 3;
    CHECK_CUDA(cudaHostRegister(data, n * sizeof(int), register_flags));
    int* device = DevicePointer(data);
    EXPECT(device != nullptr);
    if (host_pointer_ok) EXPECT(device == data);
    EXPECT(DevicePointer(data + 100) == device + 100);
    cudaPointerAttributes attributes;
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, data + 5));
    EXPECT(attributes.type == cudaMemoryTypeHost);
    EXPECT(attributes.devicePointer == device + 5 && attributes.hostPointer == data + 5);
    // Only cudaHostAlloc memory has flags to report (CUDA Runtime API, cudaHostGetFlags).
    EXPECT(cudaHostGetFlags(&flags, data) == cudaErrorInvalidValue);
    cudaGetLastError();
    ZeroCopyRounds(data, n, "cudaHostRegister");
    // Copies with the host pointer and with the device pointer see the same memory.
    std::vector<int> copy(n);
    CHECK_CUDA(cudaMemcpy(copy.data(), device, n * sizeof(int), cudaMemcpyDefault));
    for (int i = 0; i < n; ++i) EXPECT(copy[i] == i % 7);
    for (int i = 0; i < n; ++i) copy[i] = -i;
    CHECK_CUDA(cudaMemcpy(data, copy.data(), n * sizeof(int), cudaMemcpyHostToHost));
    int* on_device = nullptr;
    CHECK_CUDA(cudaMalloc(&on_device, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(on_device, device, n * sizeof(int), cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpy(copy.data(), on_device, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) EXPECT(copy[i] == -i);
    CHECK_CUDA(cudaFree(on_device));

    // Overlapping registrations and bad unregistrations are refused as CUDA documents.
    EXPECT(cudaHostRegister(data + 10, 64, 0) == cudaErrorHostMemoryAlreadyRegistered);
    EXPECT(cudaHostRegister(data - 2, 16, 0) == cudaErrorHostMemoryAlreadyRegistered);
    EXPECT(cudaHostRegister(data + n - 1, 64, 0) == cudaErrorHostMemoryAlreadyRegistered);
    EXPECT(cudaHostUnregister(data + 1) == cudaErrorHostMemoryNotRegistered);
    cudaGetLastError();

    // Unregistered: the contents stay, the memory is the application's again.
    CHECK_CUDA(cudaHostUnregister(data));
    for (int i = 0; i < n; ++i) EXPECT(data[i] == -i);
    void* gone = nullptr;
    EXPECT(cudaHostGetDevicePointer(&gone, data, 0) == cudaErrorInvalidValue);
    EXPECT(cudaHostUnregister(data) == cudaErrorHostMemoryNotRegistered);
    cudaGetLastError();
    for (int i = 0; i < n; ++i) data[i] = 2 * i;
    for (int i = 0; i < n; ++i) EXPECT(data[i] == 2 * i);
  }

  // Read-only memory registered read-only: kernels read it.
  const size_t page_bytes = 1 << 16;
  void* read_only =
      mmap(nullptr, page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(read_only != MAP_FAILED);
  int* values = static_cast<int*>(read_only);
  const int count = static_cast<int>(page_bytes / sizeof(int));
  for (int i = 0; i < count; ++i) values[i] = i & 3;
  EXPECT(mprotect(read_only, page_bytes, PROT_READ) == 0);
  CHECK_CUDA(cudaHostRegister(read_only, page_bytes, cudaHostRegisterReadOnly));
  int* sum = nullptr;
  CHECK_CUDA(cudaMalloc(&sum, sizeof(int)));
  CHECK_CUDA(cudaMemset(sum, 0, sizeof(int)));
  Sum<<<(count + 255) / 256, 256>>>(DevicePointer(values), count, sum);
  int total = 0;
  CHECK_CUDA(cudaMemcpy(&total, sum, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(total == (0 + 1 + 2 + 3) * count / 4);
  CHECK_CUDA(cudaHostUnregister(read_only));
  EXPECT(values[5] == 1);
  CHECK_CUDA(cudaFree(sum));
  EXPECT(munmap(read_only, page_bytes) == 0);

  // Bad ranges.
  EXPECT(cudaHostRegister(nullptr, 64, 0) == cudaErrorInvalidValue);
  std::vector<int> small(16);
  EXPECT(cudaHostRegister(small.data(), 0, 0) == cudaErrorInvalidValue);
  EXPECT(cudaHostRegister(pinned, 64, 0) == cudaErrorHostMemoryAlreadyRegistered);
  cudaGetLastError();
  CHECK_CUDA(cudaFreeHost(pinned));

  // The driver API: registered with DEVICEMAP, updated by a PTX kernel.
  CHECK_CU(cuInit(0));
  CUmodule module = nullptr;
  CUfunction add_one = LoadFunction(&module, kAddOnePtx, "add_one");
  std::vector<unsigned> counters(1000, 41);
  CHECK_CU(cuMemHostRegister(counters.data(), counters.size() * sizeof(unsigned),
                             CU_MEMHOSTREGISTER_DEVICEMAP));
  CUdeviceptr device = 0;
  CHECK_CU(cuMemHostGetDevicePointer(&device, counters.data(), 0));
  unsigned length = static_cast<unsigned>(counters.size());
  void* args[] = {&device, &length};
  CHECK_CU(cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
  CHECK_CU(cuCtxSynchronize());
  for (unsigned value : counters) EXPECT(value == 42);
  CHECK_CU(cuMemHostUnregister(counters.data()));
  EXPECT(cuMemHostUnregister(counters.data()) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  CHECK_CU(cuModuleUnload(module));
  std::printf("mapped_host: kernels used mapped and registered host memory in place\n");
  return 0;
}
