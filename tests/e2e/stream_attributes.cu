// Stream attributes and L2 persistence (CUDA Runtime API, cudaStreamSetAttribute,
// cudaAccessPolicyWindow, cudaLimitPersistingL2CacheSize): accepted, reported back, checked as
// CUDA checks them, copied between streams, and kernels on the stream still compute right.
#include "check.h"

__global__ void Twice(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= 2;
}

int main() {
  const int n = 1024;
  int* data;
  CHECK_CUDA(cudaMalloc(&data, n * sizeof(int)));
  cudaStream_t stream, other;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaStreamCreate(&other));

  // L2 set-aside: clamped to the device's maximum, read back.
  int max_persisting = 0, max_window = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&max_persisting, cudaDevAttrMaxPersistingL2CacheSize, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, 0));
  EXPECT(max_persisting > 0 && max_window > 0);
  size_t limit = 1;
  CHECK_CUDA(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, max_persisting / 2));
  CHECK_CUDA(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  EXPECT(limit == size_t(max_persisting / 2));
  // Above the maximum: refused, as NVIDIA's driver does (H100, driver 580), the value kept.
  EXPECT(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, size_t(max_persisting) * 4) ==
         cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK_CUDA(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  EXPECT(limit == size_t(max_persisting / 2));
  CHECK_CUDA(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, max_persisting));
  CHECK_CUDA(cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize));
  EXPECT(limit == size_t(max_persisting));

  // An access policy window: the defaults, then the window set, read back and copied.
  cudaStreamAttrValue value = {};
  CHECK_CUDA(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &value));
  EXPECT(value.accessPolicyWindow.num_bytes == 0);
  cudaStreamAttrValue window = {};
  window.accessPolicyWindow = {data, n * sizeof(int), 0.6f, cudaAccessPropertyPersisting,
                               cudaAccessPropertyStreaming};
  CHECK_CUDA(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window));
  CHECK_CUDA(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &value));
  EXPECT(value.accessPolicyWindow.base_ptr == data);
  EXPECT(value.accessPolicyWindow.num_bytes == n * sizeof(int));
  EXPECT(value.accessPolicyWindow.hitRatio == 0.6f);
  EXPECT(value.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting);
  EXPECT(value.accessPolicyWindow.missProp == cudaAccessPropertyStreaming);
  CHECK_CUDA(cudaStreamCopyAttributes(other, stream));
  value = {};
  CHECK_CUDA(cudaStreamGetAttribute(other, cudaStreamAttributeAccessPolicyWindow, &value));
  EXPECT(value.accessPolicyWindow.num_bytes == n * sizeof(int));

  // Values CUDA refuses.
  cudaStreamAttrValue bad = window;
  bad.accessPolicyWindow.hitRatio = 1.5f;
  EXPECT(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &bad) ==
         cudaErrorInvalidValue);
  bad = window;
  bad.accessPolicyWindow.num_bytes = size_t(max_window) + 1;
  EXPECT(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &bad) ==
         cudaErrorInvalidValue);
  bad = window;
  bad.accessPolicyWindow.missProp = cudaAccessPropertyPersisting;
  EXPECT(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &bad) ==
         cudaErrorInvalidValue);
  EXPECT(cudaStreamSetAttribute(stream, cudaLaunchAttributeCooperative, &window) ==
         cudaErrorInvalidValue);
  EXPECT(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, nullptr) ==
         cudaErrorInvalidValue);
  cudaGetLastError();

  // The other stream attributes.
  cudaStreamAttrValue policy = {};
  policy.syncPolicy = cudaSyncPolicyBlockingSync;
  CHECK_CUDA(cudaStreamSetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &policy));
  value = {};
  CHECK_CUDA(cudaStreamGetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &value));
  EXPECT(value.syncPolicy == cudaSyncPolicyBlockingSync);
  CHECK_CUDA(cudaStreamGetAttribute(stream, cudaStreamAttributePriority, &value));
  EXPECT(value.priority == 0);
  CHECK_CUDA(cudaStreamSetAttribute(0, cudaStreamAttributeSynchronizationPolicy, &policy));

  // Launches on the stream, with a window as a launch attribute too, compute right.
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = i;
  CHECK_CUDA(cudaMemcpyAsync(data, host, sizeof host, cudaMemcpyHostToDevice, stream));
  Twice<<<n / 256, 256, 0, stream>>>(data, n);
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeAccessPolicyWindow;
  attribute.val = window;
  cudaLaunchConfig_t config = {dim3(n / 256), dim3(256), 0, stream, &attribute, 1};
  CHECK_CUDA(cudaLaunchKernelEx(&config, Twice, data, n));
  attribute.val = bad;
  EXPECT(cudaLaunchKernelEx(&config, Twice, data, n) == cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK_CUDA(cudaMemcpyAsync(host, data, sizeof host, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i) EXPECT(host[i] == 4 * i);

  CHECK_CUDA(cudaCtxResetPersistingL2Cache());
  CHECK_CUDA(cudaStreamDestroy(other));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(data));
  std::printf("stream_attributes: attributes kept, checked and copied\n");
  return 0;
}
