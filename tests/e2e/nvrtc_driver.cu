// Run-time compilation through the driver API, as NVRTC users do: the kernel is compiled to PTX
// with NVRTC, loaded with cuModuleLoadDataEx and launched with cuLaunchKernel, its arguments
// given once as kernelParams and once packed in `extra`; also a module variable, 8/16/32-bit
// memsets, a stream with events, and the errors for bad launches, a cubin image (run where the
// device has machine code, refused by the emulated GPU) and a function of an unloaded module. Linked with -lcuda: under tally-run, libcuda.so.1 is the shim.
#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.h"
#include "check_cu.h"

#define CHECK_NVRTC(call)                                                       \
  do {                                                                          \
    const nvrtcResult check_result_ = (call);                                   \
    if (check_result_ != NVRTC_SUCCESS) {                                       \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   nvrtcGetErrorString(check_result_));                         \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

namespace {

// A struct passed by value and a trailing char: the parameter layout has alignment padding.
const char* kSource = R"(
struct Affine { float scale; int offset; };
__device__ int launches;
extern "C" __global__ void affine(const float* x, float* y, Affine a, unsigned long long n,
                                  char bias) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a.scale * x[i] + a.offset + bias;
  if (i == 0) atomicAdd(&launches, 1);
}
)";

struct Affine {
  float scale;
  int offset;
};

// The parameters as cuLaunchKernel's CU_LAUNCH_PARAM_BUFFER_POINTER wants them: each at its
// natural alignment, in order.
struct PackedParams {
  CUdeviceptr x;
  CUdeviceptr y;
  Affine a;
  unsigned long long n;
  char bias;
};

std::vector<char> Compile(const char* arch, bool cubin) {
  nvrtcProgram program;
  CHECK_NVRTC(nvrtcCreateProgram(&program, kSource, "affine.cu", 0, nullptr, nullptr));
  const char* options[] = {arch};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 1, options);
  if (compiled != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::vector<char> log(size + 1);
    nvrtcGetProgramLog(program, log.data());
    std::fprintf(stderr, "NVRTC: %s\n", log.data());
    std::exit(1);
  }
  size_t size = 0;
  std::vector<char> image;
  if (cubin) {
    CHECK_NVRTC(nvrtcGetCUBINSize(program, &size));
    image.resize(size);
    CHECK_NVRTC(nvrtcGetCUBIN(program, image.data()));
  } else {
    CHECK_NVRTC(nvrtcGetPTXSize(program, &size));
    image.resize(size);
    CHECK_NVRTC(nvrtcGetPTX(program, image.data()));
  }
  CHECK_NVRTC(nvrtcDestroyProgram(&program));
  return image;
}

constexpr unsigned kN = 1000;
constexpr unsigned kBlock = 128;
constexpr unsigned kGrid = (kN + kBlock - 1) / kBlock;

void ExpectAffine(const std::vector<float>& x, CUdeviceptr y, Affine a, char bias) {
  std::vector<float> result(kN);
  CHECK_CU(cuMemcpyDtoH(result.data(), y, kN * sizeof(float)));
  for (unsigned i = 0; i < kN; ++i) {
    // Small integers: every value is exact in float.
    if (result[i] != a.scale * x[i] + a.offset + bias) {
      std::fprintf(stderr, "y[%u] = %g, expected %g\n", i, result[i],
                   a.scale * x[i] + a.offset + bias);
      std::exit(1);
    }
  }
}

void TestMemsets(CUdeviceptr buffer) {
  std::vector<unsigned char> bytes(64);
  CHECK_CU(cuMemsetD32(buffer, 0x01020304u, 16));
  CHECK_CU(cuMemsetD16(buffer + 8, 0xa0b0, 4));
  CHECK_CU(cuMemsetD8(buffer + 40, 0x7f, 3));
  CHECK_CU(cuMemcpyDtoH(bytes.data(), buffer, bytes.size()));
  for (size_t i = 0; i < bytes.size(); ++i) {
    unsigned char expected = static_cast<unsigned char>(0x04 - i % 4);  // little endian
    if (i >= 8 && i < 16) expected = i % 2 == 0 ? 0xb0 : 0xa0;
    if (i >= 40 && i < 43) expected = 0x7f;
    EXPECT(bytes[i] == expected);
  }
  // A 32-bit memset must start at a 4-byte boundary (CUDA Driver API, cuMemsetD32).
  EXPECT(cuMemsetD32(buffer + 2, 0, 1) == CUDA_ERROR_INVALID_VALUE);
}

}  // namespace

int main() {
  const std::vector<char> ptx = Compile("--gpu-architecture=compute_80", false);

  CHECK_CU(cuInit(0));
  int version = 0;
  CHECK_CU(cuDriverGetVersion(&version));
  EXPECT(version >= 12000);
  int count = 0;
  CHECK_CU(cuDeviceGetCount(&count));
  EXPECT(count == 1);
  CUdevice device;
  CHECK_CU(cuDeviceGet(&device, 0));
  EXPECT(cuDeviceGet(&device, 1) == CUDA_ERROR_INVALID_DEVICE);
  char name[128] = {};
  CHECK_CU(cuDeviceGetName(name, sizeof(name), device));
  EXPECT(std::strlen(name) > 0);
  int major = 0;
  CHECK_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  EXPECT(major >= 8);
  size_t total = 0;
  CHECK_CU(cuDeviceTotalMem(&total, device));
  EXPECT(total > 0);

  CUcontext context;
  CHECK_CU(cuCtxCreate(&context, nullptr, 0, device));
  CUcontext current = nullptr;
  CHECK_CU(cuCtxGetCurrent(&current));
  EXPECT(current == context);

  CUmodule module;
  char error_log[256] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(sizeof(error_log))};
  CHECK_CU(cuModuleLoadDataEx(&module, ptx.data(), 2, options, values));
  CUfunction affine;
  CHECK_CU(cuModuleGetFunction(&affine, module, "affine"));
  CUfunction missing;
  EXPECT(cuModuleGetFunction(&missing, module, "no_such_kernel") == CUDA_ERROR_NOT_FOUND);
  int max_threads = 0;
  CHECK_CU(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, affine));
  EXPECT(max_threads >= static_cast<int>(kBlock));

  std::vector<float> x(kN);
  for (unsigned i = 0; i < kN; ++i) x[i] = static_cast<float>(i % 97);
  CUdeviceptr dx, dy;
  CHECK_CU(cuMemAlloc(&dx, kN * sizeof(float)));
  CHECK_CU(cuMemAlloc(&dy, kN * sizeof(float)));
  CHECK_CU(cuMemcpyHtoD(dx, x.data(), kN * sizeof(float)));
  TestMemsets(dy);

  // kernelParams: one pointer per parameter.
  Affine a{2.0f, 3};
  unsigned long long n = kN;
  char bias = 5;
  void* params[] = {&dx, &dy, &a, &n, &bias};
  CHECK_CU(cuLaunchKernel(affine, kGrid, 1, 1, kBlock, 1, 1, 0, nullptr, params, nullptr));
  CHECK_CU(cuCtxSynchronize());
  ExpectAffine(x, dy, a, bias);

  // extra: the packed buffer, on a stream between two events.
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CUevent start, end;
  CHECK_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&end, CU_EVENT_DEFAULT));
  PackedParams packed{dx, dy, {-1.0f, 40}, kN, -2};
  size_t packed_size = sizeof(packed);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &packed_size, CU_LAUNCH_PARAM_END};
  CHECK_CU(cuMemsetD32Async(dy, 0, kN, stream));
  CHECK_CU(cuEventRecord(start, stream));
  CHECK_CU(cuLaunchKernel(affine, kGrid, 1, 1, kBlock, 1, 1, 0, stream, nullptr, extra));
  CHECK_CU(cuEventRecord(end, stream));
  CHECK_CU(cuEventSynchronize(end));
  float milliseconds = -1;
  CHECK_CU(cuEventElapsedTime(&milliseconds, start, end));
  EXPECT(milliseconds >= 0);
  CHECK_CU(cuStreamSynchronize(stream));
  ExpectAffine(x, dy, packed.a, packed.bias);

  // Bad launches fail at once: a parameter buffer too small, both argument forms.
  size_t short_size = 16;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &short_size, CU_LAUNCH_PARAM_END};
  EXPECT(cuLaunchKernel(affine, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, short_extra) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuLaunchKernel(affine, 1, 1, 1, 1, 1, 1, 0, nullptr, params, extra) ==
         CUDA_ERROR_INVALID_VALUE);

  // The module variable counted both launches.
  CUdeviceptr launches_address;
  size_t launches_size = 0;
  CHECK_CU(cuModuleGetGlobal(&launches_address, &launches_size, module, "launches"));
  EXPECT(launches_size == sizeof(int));
  int launches = 0;
  CHECK_CU(cuMemcpyDtoH(&launches, launches_address, sizeof(launches)));
  EXPECT(launches == 2);

  // A cubin for the device holds its machine code only: NVIDIA's driver runs it as it is (the
  // kernel in its original form, its parameter layout from the driver); the emulated GPU,
  // which executes PTX, refuses it.
  int minor = 0;
  CHECK_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  char arch[64];
  std::snprintf(arch, sizeof(arch), "--gpu-architecture=sm_%d%d", major, minor);
  const std::vector<char> cubin = Compile(arch, true);
  CUmodule cubin_module;
  const CUresult cubin_loaded = cuModuleLoadData(&cubin_module, cubin.data());
  EXPECT(cubin_loaded == CUDA_SUCCESS || cubin_loaded == CUDA_ERROR_NO_BINARY_FOR_GPU);
  if (cubin_loaded == CUDA_SUCCESS) {
    CUfunction machine_code;
    CHECK_CU(cuModuleGetFunction(&machine_code, cubin_module, "affine"));
    CHECK_CU(cuMemsetD32(dy, 0, kN));
    CHECK_CU(cuLaunchKernel(machine_code, kGrid, 1, 1, kBlock, 1, 1, 0, nullptr, params, nullptr));
    CHECK_CU(cuCtxSynchronize());
    ExpectAffine(x, dy, a, bias);
    CHECK_CU(cuModuleUnload(cubin_module));
    std::printf("nvrtc_driver: the device ran the kernel from its cubin\n");
  }

  CHECK_CU(cuModuleUnload(module));
  EXPECT(cuLaunchKernel(affine, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) ==
         CUDA_ERROR_INVALID_HANDLE);
  EXPECT(cuModuleUnload(module) == CUDA_ERROR_INVALID_HANDLE);

  CHECK_CU(cuEventDestroy(start));
  CHECK_CU(cuEventDestroy(end));
  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuMemFree(dx));
  CHECK_CU(cuMemFree(dy));
  CHECK_CU(cuCtxDestroy(context));
  std::printf("nvrtc_driver: OK\n");
  return 0;
}
