// A program whose device code the device cannot load (here a scalar video instruction, vshl,
// that the emulated GPU does not implement): as with CUDA's runtime, each launch of one of the
// module's kernels fails at once with cudaErrorInvalidPtx ("a PTX JIT compilation failed"),
// non-sticky, and everything else keeps working. run_e2e.sh also checks that the server's log
// names the instruction.
#include <cuda.h>

#include <vector>

#include "add_one_ptx.h"
#include "check.h"
#include "check_cu.h"
#include "driver_setup.h"

__global__ void Plain(int* out) { out[threadIdx.x] = threadIdx.x; }

__global__ void Video(unsigned* out, unsigned shift) {
  unsigned shifted;
  asm volatile("vshl.u32.u32.u32.clamp %0, %1, %2;" : "=r"(shifted) : "r"(threadIdx.x), "r"(shift));
  out[threadIdx.x] = shifted;
}

// Refused at the launch with the load's error, and only there: nothing poisons later calls.
void ExpectRefused(const char* what) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaErrorInvalidPtx) {
    std::fprintf(stderr, "%s: the launch gave %s, expected cudaErrorInvalidPtx\n", what,
                 cudaGetErrorName(error));
    std::exit(1);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
}

int main() {
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 1024 * sizeof(int)));
  // Both kernels live in the one module the device refuses.
  Plain<<<1, 32>>>(out);
  ExpectRefused("Plain, first launch");
  Video<<<1, 32>>>(reinterpret_cast<unsigned*>(out), 2);
  ExpectRefused("Video");
  void* args[] = {&out};
  EXPECT(cudaLaunchKernel(reinterpret_cast<const void*>(Plain), dim3(1), dim3(32), args, 0,
                          nullptr) == cudaErrorInvalidPtx);
  ExpectRefused("Plain through cudaLaunchKernel");
  cudaFuncAttributes attributes;
  EXPECT(cudaFuncGetAttributes(&attributes, Plain) == cudaErrorInvalidPtx);
  cudaGetLastError();

  // Memory, copies and other modules are unaffected.
  std::vector<int> host(1024, 9);
  CHECK_CUDA(cudaMemcpy(out, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice));
  CHECK_CU(cuInit(0));
  CUmodule module = nullptr;
  CUfunction add_one = LoadFunction(&module, kAddOnePtx, "add_one");
  unsigned n = 1024;
  void* add_args[] = {&out, &n};
  CHECK_CU(cuLaunchKernel(add_one, 4, 1, 1, 256, 1, 1, 0, nullptr, add_args, nullptr));
  CHECK_CUDA(cudaMemcpy(host.data(), out, host.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int v : host) EXPECT(v == 10);
  CHECK_CU(cuModuleUnload(module));

  // The driver API's load of such code reports the same error.
  const char* video_ptx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry shift(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 5;
  vshl.u32.u32.u32.clamp %r2, %r1, 3;
  st.global.u32 [%rd1], %r2;
  ret;
}
)";
  EXPECT(cuModuleLoadData(&module, video_ptx) == CUDA_ERROR_INVALID_PTX);

  // Still refused, still not sticky.
  Plain<<<1, 32>>>(out);
  ExpectRefused("Plain, again");
  CHECK_CUDA(cudaFree(out));
  std::printf(
      "module_refused: launches of the refused module fail with cudaErrorInvalidPtx, "
      "everything else works\n");
  return 0;
}
