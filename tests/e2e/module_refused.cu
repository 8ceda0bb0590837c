// A program with one kernel the device cannot run (here a scalar video instruction, vshl, that
// the emulated GPU does not implement) beside kernels it can: only that kernel fails, at each of
// its launches, with cudaErrorInvalidPtx ("a PTX JIT compilation failed"), non-sticky; the other
// kernels of the same module run, and everything else keeps working. run_e2e.sh also checks
// that the server's log names the instruction.
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

// Refused at the launch with the kernel's error, and only there: nothing poisons later calls.
void ExpectRefused(const char* what) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaErrorInvalidPtx) {
    std::fprintf(stderr, "%s: the launch gave %s, expected cudaErrorInvalidPtx\n", what,
                 cudaGetErrorName(error));
    std::exit(1);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
}

// Plain, run and checked: the module's other kernel is not held back by Video.
void ExpectPlainRuns(int* out) {
  CHECK_CUDA(cudaMemset(out, 0xff, 32 * sizeof(int)));
  Plain<<<1, 32>>>(out);
  CHECK_CUDA(cudaGetLastError());
  std::vector<int> host(32);
  CHECK_CUDA(cudaMemcpy(host.data(), out, host.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 32; ++i) EXPECT(host[i] == i);
}

int main() {
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 1024 * sizeof(int)));
  // Both kernels live in one module: Plain runs, Video is refused at each launch.
  ExpectPlainRuns(out);
  Video<<<1, 32>>>(reinterpret_cast<unsigned*>(out), 2);
  ExpectRefused("Video");
  unsigned shift = 2;
  void* args[] = {&out, &shift};
  EXPECT(cudaLaunchKernel(reinterpret_cast<const void*>(Video), dim3(1), dim3(32), args, 0,
                          nullptr) == cudaErrorInvalidPtx);
  ExpectRefused("Video through cudaLaunchKernel");
  cudaFuncAttributes attributes;
  EXPECT(cudaFuncGetAttributes(&attributes, Video) == cudaErrorInvalidPtx);
  cudaGetLastError();
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, Plain));
  ExpectPlainRuns(out);

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

  // Through the driver API: the module loads, its plain kernel runs, and the kernel the device
  // cannot run is refused when it is looked up.
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
.visible .entry store(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 41;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  CHECK_CU(cuModuleLoadData(&module, video_ptx));
  CUfunction store = nullptr;
  CHECK_CU(cuModuleGetFunction(&store, module, "store"));
  void* store_args[] = {&out};
  CHECK_CU(cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, nullptr, store_args, nullptr));
  int stored = 0;
  CHECK_CUDA(cudaMemcpy(&stored, out, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(stored == 41);
  CUfunction video = nullptr;
  EXPECT(cuModuleGetFunction(&video, module, "shift") == CUDA_ERROR_INVALID_PTX);
  CHECK_CU(cuModuleUnload(module));

  // Still refused, still not sticky.
  Video<<<1, 32>>>(reinterpret_cast<unsigned*>(out), 2);
  ExpectRefused("Video, again");
  ExpectPlainRuns(out);
  CHECK_CUDA(cudaFree(out));
  std::printf(
      "module_refused: the kernel the device cannot run fails with cudaErrorInvalidPtx, its "
      "module's other kernels and everything else work\n");
  return 0;
}
