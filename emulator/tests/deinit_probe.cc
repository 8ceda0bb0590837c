// A process that exits with live streams and a kernel that never ends, and checks that it does
// exit and that entry points called afterwards (from an atexit handler registered before the
// library was loaded) answer CUDA_ERROR_DEINITIALIZED instead of crashing. Exit status 0 on
// success.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

PFN_cuMemAlloc_v3020 g_mem_alloc = nullptr;
PFN_cuStreamSynchronize_v2000 g_stream_synchronize = nullptr;

void CheckAfterTeardown() {
  CUdeviceptr pointer = 0;
  CUresult alloc = g_mem_alloc(&pointer, 16);
  CUresult sync = g_stream_synchronize(nullptr);
  bool ok = alloc == CUDA_ERROR_DEINITIALIZED && sync == CUDA_ERROR_DEINITIALIZED;
  if (!ok)
    std::fprintf(stderr, "after teardown: cuMemAlloc=%d cuStreamSynchronize=%d\n", alloc, sync);
  _exit(ok ? 0 : 1);
}

template <typename T>
T Resolve(void* library, const char* name) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "missing %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<T>(symbol);
}

}  // namespace

int main() {
  std::atexit(CheckAfterTeardown);
  void* library = dlopen(TALLY_EMU_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return 2;
  g_mem_alloc = Resolve<PFN_cuMemAlloc_v3020>(library, "cuMemAlloc_v2");
  g_stream_synchronize = Resolve<PFN_cuStreamSynchronize_v2000>(library, "cuStreamSynchronize");
  auto init = Resolve<PFN_cuInit_v2000>(library, "cuInit");
  auto retain = Resolve<PFN_cuDevicePrimaryCtxRetain_v7000>(library, "cuDevicePrimaryCtxRetain");
  auto set_current = Resolve<PFN_cuCtxSetCurrent_v4000>(library, "cuCtxSetCurrent");
  auto stream_create = Resolve<PFN_cuStreamCreate_v2000>(library, "cuStreamCreate");
  auto load = Resolve<PFN_cuModuleLoadData_v2000>(library, "cuModuleLoadData");
  auto get_function = Resolve<PFN_cuModuleGetFunction_v2000>(library, "cuModuleGetFunction");
  auto launch = Resolve<PFN_cuLaunchKernel_v4000>(library, "cuLaunchKernel");
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr pointer = 0;
  if (init(0) != CUDA_SUCCESS || retain(&context, 0) != CUDA_SUCCESS ||
      set_current(context) != CUDA_SUCCESS || stream_create(&stream, 0) != CUDA_SUCCESS ||
      g_mem_alloc(&pointer, 1024) != CUDA_SUCCESS) {
    return 3;
  }
  const char* forever =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry forever() {\n$L_spin:\n bra $L_spin;\n}\n";
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  if (load(&module, forever) != CUDA_SUCCESS ||
      get_function(&function, module, "forever") != CUDA_SUCCESS ||
      launch(function, 4, 1, 1, 64, 1, 1, 0, stream, nullptr, nullptr) != CUDA_SUCCESS) {
    return 4;
  }
  // Another thread keeps calling into the driver while the process exits: its calls must
  // either complete or answer DEINITIALIZED, never touch a freed driver.
  std::thread([] {
    while (true) {
      CUdeviceptr scratch = 0;
      if (g_mem_alloc(&scratch, 256) == CUDA_ERROR_DEINITIALIZED) return;
    }
  }).detach();
  usleep(50 * 1000);  // let the kernel start spinning
  auto query = Resolve<PFN_cuStreamQuery_v2000>(library, "cuStreamQuery");
  if (query(stream) != CUDA_ERROR_NOT_READY) return 5;  // still spinning
  return 0;  // exit() runs the library's teardown, then CheckAfterTeardown
}
