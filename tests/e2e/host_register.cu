// cudaPointerGetAttributes for every kind of memory, and cudaHostRegister: registered memory
// copies correctly and is mapped for the device at an address of its own (mapped_host.cu runs
// kernels on it).
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "check.h"

__global__ void Fill(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = 1000 + i;
}

void ExpectAttributes(const void* pointer, cudaMemoryType type, const void* device,
                      const void* host) {
  cudaPointerAttributes attributes;
  CHECK_CUDA(cudaPointerGetAttributes(&attributes, pointer));
  EXPECT(attributes.type == type);
  EXPECT(attributes.devicePointer == device);
  EXPECT(attributes.hostPointer == host);
  EXPECT(attributes.device == (type == cudaMemoryTypeUnregistered ? cudaInvalidDeviceId : 0));
}

int main() {
  const int n = 512;
  int* device = nullptr;
  int* pinned = nullptr;
  int* managed = nullptr;
  CHECK_CUDA(cudaMalloc(&device, n * sizeof(int)));
  CHECK_CUDA(cudaMallocHost(&pinned, n * sizeof(int)));
  CHECK_CUDA(cudaMallocManaged(&managed, n * sizeof(int)));
  std::vector<int> pageable(n, 0);

  ExpectAttributes(device, cudaMemoryTypeDevice, device, nullptr);
  ExpectAttributes(device + 7, cudaMemoryTypeDevice, device + 7, nullptr);
  ExpectAttributes(pinned + 3, cudaMemoryTypeHost, pinned + 3, pinned + 3);
  ExpectAttributes(managed, cudaMemoryTypeManaged, managed, managed);
  ExpectAttributes(pageable.data(), cudaMemoryTypeUnregistered, nullptr, pageable.data());
  EXPECT(cudaPointerGetAttributes(nullptr, device) == cudaErrorInvalidValue);
  cudaGetLastError();

  // Registration: mapped at a device address of its own, copies work both ways; only
  // cudaHostAlloc memory has flags to report (CUDA Runtime API, cudaHostGetFlags).
  std::vector<int> registered(n, -1);
  CHECK_CUDA(cudaHostRegister(registered.data(), n * sizeof(int), cudaHostRegisterDefault));
  int* mapped = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), registered.data(), 0));
  EXPECT(mapped != nullptr && mapped != registered.data());
  ExpectAttributes(registered.data() + 1, cudaMemoryTypeHost, mapped + 1, registered.data() + 1);
  ExpectAttributes(mapped + 2, cudaMemoryTypeHost, mapped + 2, registered.data() + 2);
  unsigned int flags = 99;
  EXPECT(cudaHostGetFlags(&flags, registered.data()) == cudaErrorInvalidValue);
  EXPECT(cudaHostRegister(registered.data() + 4, 16, 0) == cudaErrorHostMemoryAlreadyRegistered);
  EXPECT(cudaHostRegister(pinned, 16, 0) == cudaErrorHostMemoryAlreadyRegistered);
  EXPECT(cudaHostRegister(registered.data(), 16, cudaHostRegisterIoMemory) ==
         cudaErrorNotSupported);
  cudaGetLastError();
  Fill<<<(n + 127) / 128, 128>>>(device, n);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMemcpyAsync(registered.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost,
                             stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i) EXPECT(registered[i] == 1000 + i);
  for (int i = 0; i < n; ++i) registered[i] = -i;
  CHECK_CUDA(cudaMemcpy(managed, registered.data(), n * sizeof(int), cudaMemcpyDefault));
  for (int i = 0; i < n; ++i) EXPECT(managed[i] == -i);
  CHECK_CUDA(cudaHostUnregister(registered.data()));
  EXPECT(cudaHostUnregister(registered.data()) == cudaErrorHostMemoryNotRegistered);
  cudaGetLastError();
  ExpectAttributes(registered.data(), cudaMemoryTypeUnregistered, nullptr, registered.data());

  // The bytes around a registered range on its first and last page stay the application's,
  // during and after the registration (Tally moves those pages whole into page-locked memory);
  // so do the range's own.
  {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    auto* const pages = static_cast<unsigned char*>(
        mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT(pages != MAP_FAILED);
    const auto pattern = [](size_t i) { return static_cast<unsigned char>(i * 7 + 3); };
    for (size_t i = 0; i < 3 * page; ++i) pages[i] = pattern(i);
    const size_t offset = 100, size = 2 * page + 50;  // from the first page into the third
    CHECK_CUDA(cudaHostRegister(pages + offset, size, cudaHostRegisterDefault));
    for (size_t i = 0; i < 3 * page; ++i) EXPECT(pages[i] == pattern(i));
    pages[0] = 0xee;             // before the range, written while it is registered
    pages[3 * page - 1] = 0xdd;  // after it
    CHECK_CUDA(cudaHostUnregister(pages + offset));
    EXPECT(pages[0] == 0xee && pages[3 * page - 1] == 0xdd);
    for (size_t i = 1; i < 3 * page - 1; ++i) EXPECT(pages[i] == pattern(i));
    munmap(pages, 3 * page);
  }

  // Freed memory is no longer known.
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFreeHost(pinned));
  ExpectAttributes(pinned, cudaMemoryTypeUnregistered, nullptr, pinned);
  CHECK_CUDA(cudaFree(managed));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("host_register: pointer attributes and host registration behave\n");
  return 0;
}
