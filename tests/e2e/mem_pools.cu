// Stream-ordered allocation and memory pools through Tally, under tally-run --memory-limit 16M:
// kernels on cudaMallocAsync memory, reuse on the freeing stream, attributes, trimming, created
// pools, the current pool, the client's quota, bad handles, and the driver API's forms.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "check.h"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr int kCount = 1 << 16;

__global__ void Fill(int* data, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kCount) data[i] = value + i;
}

uint64_t Attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  uint64_t value = 0;
  CHECK_CUDA(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

void CheckFilled(const int* device, int value, cudaStream_t stream) {
  static int host[kCount];
  CHECK_CUDA(cudaMemcpyAsync(host, device, sizeof(host), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < kCount; ++i) EXPECT(host[i] == value + i);
}

// The default pool keeps what is freed to it (threshold: everything) and reuses it on the stream.
void DefaultPool(cudaStream_t stream) {
  cudaMemPool_t pool = nullptr;
  CHECK_CUDA(cudaDeviceGetDefaultMemPool(&pool, 0));
  cudaMemPool_t current = nullptr;
  CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
  EXPECT(current == pool);
  uint64_t keep_all = UINT64_MAX;
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  EXPECT(Attribute(pool, cudaMemPoolAttrReleaseThreshold) == UINT64_MAX);
  int* first = nullptr;
  CHECK_CUDA(cudaMallocAsync(&first, kCount * sizeof(int), stream));
  Fill<<<kCount / 256, 256, 0, stream>>>(first, 7);
  CheckFilled(first, 7, stream);
  EXPECT(Attribute(pool, cudaMemPoolAttrUsedMemCurrent) == kCount * sizeof(int));
  CHECK_CUDA(cudaFreeAsync(first, stream));
  EXPECT(Attribute(pool, cudaMemPoolAttrUsedMemCurrent) == 0);
  EXPECT(Attribute(pool, cudaMemPoolAttrReservedMemCurrent) == kCount * sizeof(int));
  int* second = nullptr;
  CHECK_CUDA(cudaMallocAsync(&second, kCount * sizeof(int), stream));
  EXPECT(second == first);  // reused in stream order
  Fill<<<kCount / 256, 256, 0, stream>>>(second, 9);
  CheckFilled(second, 9, stream);
  CHECK_CUDA(cudaFreeAsync(second, stream));
  EXPECT(Attribute(pool, cudaMemPoolAttrUsedMemHigh) == kCount * sizeof(int));
  uint64_t zero = 0;
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
  EXPECT(Attribute(pool, cudaMemPoolAttrUsedMemHigh) == 0);
  CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
  EXPECT(Attribute(pool, cudaMemPoolAttrReservedMemCurrent) == 0);
  int flag = 0;
  CHECK_CUDA(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &flag));
  EXPECT(flag == 1);
}

// A created pool as the current pool; what it holds counts against the 16 MiB quota.
void CreatedPool(cudaStream_t stream) {
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location = {cudaMemLocationTypeDevice, 0};
  cudaMemPool_t pool = nullptr;
  CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  uint64_t keep_all = UINT64_MAX;
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
  void* a = nullptr;
  void* b = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(&a, 8 * kMiB, pool, stream));
  CHECK_CUDA(cudaFreeAsync(a, stream));
  CHECK_CUDA(cudaDeviceSetMemPool(0, pool));
  cudaMemPool_t current = nullptr;
  CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
  EXPECT(current == pool);
  // The pool still holds 8 MiB, so 12 more exceed the quota; the freed 8 MiB are reused.
  EXPECT(cudaMallocAsync(&b, 12 * kMiB, stream) == cudaErrorMemoryAllocation);
  CHECK_CUDA(cudaMallocAsync(&b, 8 * kMiB, stream));
  EXPECT(b == a);
  CHECK_CUDA(cudaFreeAsync(b, stream));
  CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
  CHECK_CUDA(cudaMallocAsync(&b, 12 * kMiB, stream));  // trimmed: room again
  CHECK_CUDA(cudaFreeAsync(b, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemPoolDestroy(pool));
  CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
  cudaMemPool_t default_pool = nullptr;
  CHECK_CUDA(cudaDeviceGetDefaultMemPool(&default_pool, 0));
  EXPECT(current == default_pool);
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  EXPECT(cudaMemPoolCreate(&pool, &props) == cudaErrorNotSupported);
}

void BadHandles() {
  const auto forged = reinterpret_cast<cudaMemPool_t>(uintptr_t{0x5000000000123});
  EXPECT(cudaMemPoolDestroy(forged) == cudaErrorInvalidValue);
  EXPECT(cudaMemPoolTrimTo(forged, 0) == cudaErrorInvalidValue);
  EXPECT(cudaDeviceSetMemPool(0, forged) == cudaErrorInvalidValue);
  void* p = nullptr;
  EXPECT(cudaMallocFromPoolAsync(&p, 16, forged, nullptr) == cudaErrorInvalidValue);
  EXPECT(cuMemPoolTrimTo(forged, 0) == CUDA_ERROR_INVALID_HANDLE);
  int x = 0;
  EXPECT(cudaFreeAsync(&x, nullptr) == cudaErrorInvalidValue);
  cudaGetLastError();
}

void DriverApi() {
  CUmemoryPool pool = nullptr;
  EXPECT(cuDeviceGetDefaultMemPool(&pool, 0) == CUDA_SUCCESS);
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemoryPool created = nullptr;
  EXPECT(cuMemPoolCreate(&created, &props) == CUDA_SUCCESS);
  CUdeviceptr address = 0;
  EXPECT(cuMemAllocFromPoolAsync(&address, kMiB, created, nullptr) == CUDA_SUCCESS);
  cuuint64_t used = 0;
  EXPECT(cuMemPoolGetAttribute(created, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS);
  EXPECT(used == kMiB);
  EXPECT(cuMemFreeAsync(address, nullptr) == CUDA_SUCCESS);
  EXPECT(cuMemAllocAsync(&address, 0, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemAllocAsync(&address, kMiB, nullptr) == CUDA_SUCCESS);
  EXPECT(cuMemFreeAsync(address, nullptr) == CUDA_SUCCESS);
  EXPECT(cuDeviceSetMemPool(0, created) == CUDA_SUCCESS);
  CUmemoryPool current = nullptr;
  EXPECT(cuDeviceGetMemPool(&current, 0) == CUDA_SUCCESS && current == created);
  cuuint64_t threshold = 0;
  EXPECT(cuMemPoolSetAttribute(created, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) ==
         CUDA_SUCCESS);
  EXPECT(cuMemPoolTrimTo(created, 0) == CUDA_SUCCESS);
  EXPECT(cuMemPoolDestroy(created) == CUDA_SUCCESS);
  EXPECT(cuMemPoolDestroy(created) == CUDA_ERROR_INVALID_HANDLE);
  EXPECT(cuMemPoolDestroy(pool) == CUDA_ERROR_INVALID_VALUE);
}

}  // namespace

int main() {
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  DefaultPool(stream);
  CreatedPool(stream);
  BadHandles();
  DriverApi();
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::puts("mem_pools: OK");
  return 0;
}
