// Keeps calling into the server until a call fails: when the server is killed, the failure
// must come promptly (no hang) and say that the device is unavailable.
#include <unistd.h>

#include "check.h"

int main() {
  int* device;
  CHECK_CUDA(cudaMalloc(&device, 64));
  std::printf("READY\n");
  std::fflush(stdout);
  int host[16];
  for (int i = 0; i < 60 * 1000; ++i) {
    const cudaError_t error = cudaMemcpy(host, device, sizeof(host), cudaMemcpyDeviceToHost);
    if (error != cudaSuccess) {
      std::printf("%s\n", cudaGetErrorName(error));
      return error == cudaErrorDevicesUnavailable ? 0 : 1;
    }
    usleep(1000);
  }
  return 1;  // the server was never killed
}
