// Copies of every kind (also cudaMemcpyDefault, async on a stream, and one larger than a bulk
// chunk), memsets, events, stream queries, and the error API on invalid calls. No kernels.
#include <algorithm>
#include <cstring>
#include <vector>

#include "check.h"

int main() {
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  EXPECT(count == 1);
  CHECK_CUDA(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  EXPECT(std::strlen(prop.name) > 0 && prop.warpSize == 32 && prop.totalGlobalMem > 0);
  int sms = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  EXPECT(sms == prop.multiProcessorCount);

  int least = 1, greatest = 1;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  EXPECT(greatest <= least);
  int runtime = 0, driver = 0;
  CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  CHECK_CUDA(cudaDriverGetVersion(&driver));
  EXPECT(runtime >= 13000 && driver > 0);

  // 6 MiB: more than one chunk of the bulk area in each direction; the destination is
  // page-locked host memory.
  const size_t n = (6u << 20) / sizeof(int);
  std::vector<int> host(n);
  int* pinned = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, n * sizeof(int)));
  int* back = pinned;
  std::fill(back, back + n, 0);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<int>(i * 2654435761u);
  int *a, *b;
  CHECK_CUDA(cudaMalloc(&a, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&b, n * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(a, host.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b, a, n * sizeof(int), cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaMemcpy(back, b, n * sizeof(int), cudaMemcpyDefault));
  EXPECT(std::equal(back, back + n, host.begin()));

  // Memset sets bytes; then async copies and events on a stream of our own.
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, stream));
  CHECK_CUDA(cudaMemsetAsync(b + 16, 0xab, 8 * sizeof(int), stream));
  CHECK_CUDA(cudaMemcpyAsync(back, b, 64 * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaEventRecord(stop, stream));
  // Host functions run after the stream's preceding work: the async copy above has landed.
  struct Seen {
    const int* data;
    int value;
  } seen{back, -1};
  CHECK_CUDA(cudaLaunchHostFunc(
      stream, [](void* p) { static_cast<Seen*>(p)->value = static_cast<Seen*>(p)->data[16]; },
      &seen));
  CHECK_CUDA(cudaEventSynchronize(stop));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT(seen.value == static_cast<int>(0xabababab));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT(cudaStreamQuery(stream) == cudaSuccess);
  EXPECT(cudaEventQuery(stop) == cudaSuccess);
  float ms = -1;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  EXPECT(ms >= 0);
  for (int i = 0; i < 64; ++i) {
    EXPECT(back[i] == (i >= 16 && i < 24 ? static_cast<int>(0xabababab) : host[i]));
  }
  CHECK_CUDA(cudaMemset(a, 0, n * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(back, a, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) EXPECT(back[i] == 0);

  // A pitched 2-D region: rows of 100 bytes in rows of at least 100.
  const size_t width = 100, height = 7;
  char* pitched = nullptr;
  size_t pitch = 0;
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, width, height));
  EXPECT(pitch >= width);
  std::vector<char> rows(width * height), rows_back(width * height, 0);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<char>(i * 7);
  CHECK_CUDA(
      cudaMemcpy2D(pitched, pitch, rows.data(), width, width, height, cudaMemcpyHostToDevice));
  CHECK_CUDA(
      cudaMemcpy2D(rows_back.data(), width, pitched, pitch, width, height, cudaMemcpyDeviceToHost));
  EXPECT(rows_back == rows);
  EXPECT(cudaMemcpy2D(pitched, width - 1, rows.data(), width, width, height,
                      cudaMemcpyHostToDevice) == cudaErrorInvalidPitchValue);
  cudaGetLastError();
  CHECK_CUDA(cudaFree(pitched));

  // Invalid calls fail with the runtime's codes and leave them for cudaGetLastError.
  EXPECT(cudaMemcpy(back, a + n - 1, 2 * sizeof(int), cudaMemcpyDeviceToHost) ==
         cudaErrorInvalidValue);
  EXPECT(cudaPeekAtLastError() == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaSuccess);
  EXPECT(cudaFree(host.data()) == cudaErrorInvalidValue);
  EXPECT(cudaMemset(a + n - 1, 0, 2 * sizeof(int)) == cudaErrorInvalidValue);
  EXPECT(cudaMemcpy(b, host.data(), 4, cudaMemcpyDeviceToDevice) == cudaErrorInvalidValue);
  EXPECT(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234)) ==
         cudaErrorInvalidResourceHandle);
  EXPECT(std::strcmp(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue") == 0);
  cudaGetLastError();

  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFreeAsync(b, nullptr));
  CHECK_CUDA(cudaFreeHost(pinned));
  EXPECT(cudaFreeHost(host.data()) == cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("memory: copies, memsets, streams, events and errors behave\n");
  return 0;
}
