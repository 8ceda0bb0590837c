// The driver API's kernel calls as programs linked with -lcuda use them: cuFuncGetName,
// cuFuncSetAttribute (read back with cuFuncGetAttribute), cuFuncSetCacheConfig; occupancy
// (cuOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags], cuOccupancyMaxPotentialBlockSize
// [WithFlags] with and without the block-size callback, cuOccupancyAvailableDynamicSMemPerBlock)
// for a PTX kernel compared with the runtime API's answers for its nvcc-compiled twin and
// checked against their definitions; cuLaunchCooperativeKernel and cuLaunchKernelEx with the
// cooperative attribute running a grid-wide barrier (which traps outside cooperative launches),
// cuLaunchKernelEx with hints, with `extra`, and the errors for too large a cooperative grid and
// for attributes Tally refuses or does not know. Also that cuGetProcAddress answers each name.
#include <cuda.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "add_one_ptx.h"
#include "check.h"
#include "check_cu.h"
#include "driver_setup.h"

// The runtime API twin of the PTX `tile` below (outside the anonymous namespace, so that its
// mangled name is plain).
__global__ void __launch_bounds__(256) Tile(unsigned* out) {
  __shared__ unsigned buffer[2048];
  buffer[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = buffer[threadIdx.x];
}

namespace {

// rotate(a, b, n, salt): a[i] = 3i + salt, then a grid-wide barrier, then b[i] = a[(i + ntid) % n]
// (an element another block wrote), for a 1-D grid. The barrier is cooperative_groups' (the
// driver's grid workspace, whose address a cooperative launch passes in %envreg1:%envreg2):
// the first thread of block 0 adds 0x80000001 - nblocks to its counter, those of the other
// blocks 1, and each waits until bit 31 of the counter differs from what it found; outside a
// cooperative launch the address is 0 and the kernel traps.
// tile(out): a kernel with 8 KiB of static shared memory and at most 256 threads per block, the
// twin of Tile below for the occupancy comparisons.
const char* const kPtx = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry rotate(.param .u64 a, .param .u64 b, .param .u32 n, .param .u32 salt)
{
  .reg .pred %p<4>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [salt];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.lt.u32 %p1, %r6, %r1;
  mad.lo.s32 %r7, %r6, 3, %r2;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd1, %rd3;
  @%p1 st.global.u32 [%rd4], %r7;

  mov.u32 %r8, %envreg1;
  mov.u32 %r9, %envreg2;
  cvt.u64.u32 %rd5, %r8;
  cvt.u64.u32 %rd6, %r9;
  shl.b64 %rd5, %rd5, 32;
  or.b64 %rd5, %rd5, %rd6;
  setp.ne.u64 %p2, %rd5, 0;
  @%p2 bra HAVE_WORKSPACE;
  trap;
HAVE_WORKSPACE:
  barrier.sync 0;
  setp.ne.u32 %p2, %r5, 0;
  @%p2 bra PASSED;
  add.s64 %rd7, %rd5, 4;
  mov.u32 %r10, %nctaid.x;
  mov.u32 %r11, -2147483647;
  sub.s32 %r12, %r11, %r10;
  setp.eq.u32 %p3, %r3, 0;
  selp.b32 %r13, %r12, 1, %p3;
  atom.add.release.gpu.u32 %r14, [%rd7], %r13;
SPIN:
  ld.acquire.gpu.u32 %r15, [%rd7];
  xor.b32 %r16, %r15, %r14;
  setp.gt.s32 %p3, %r16, -1;
  @%p3 bra SPIN;
PASSED:
  barrier.sync 0;

  @!%p1 bra DONE;
  add.u32 %r17, %r6, %r4;
  rem.u32 %r18, %r17, %r1;
  mul.wide.u32 %rd8, %r18, 4;
  add.s64 %rd9, %rd1, %rd8;
  ld.global.u32 %r19, [%rd9];
  add.s64 %rd10, %rd2, %rd3;
  st.global.u32 [%rd10], %r19;
DONE:
  ret;
}

.visible .entry tile(.param .u64 out)
.maxntid 256, 1, 1
{
  .shared .align 4 .b8 buffer[8192];
  .reg .b32 %r<4>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u64 %rd2, buffer;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.shared.u32 [%rd4], %r1;
  barrier.sync 0;
  ld.shared.u32 %r2, [%rd4];
  add.s64 %rd4, %rd1, %rd3;
  st.global.u32 [%rd4], %r2;
  ret;
}
)";

CUfunction add_one = nullptr, rotate = nullptr, tile = nullptr;

void TestEntryPoints() {
  for (const char* name :
       {"cuLaunchCooperativeKernel", "cuLaunchKernelEx", "cuFuncSetAttribute",
        "cuFuncSetCacheConfig", "cuFuncGetName", "cuFuncGetAttribute",
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cuOccupancyMaxPotentialBlockSize",
        "cuOccupancyMaxPotentialBlockSizeWithFlags", "cuOccupancyAvailableDynamicSMemPerBlock"}) {
    ExpectProcAddress(name, 13000, name);
  }
}

void TestFunctionAttributes() {
  const char* name = nullptr;
  CHECK_CU(cuFuncGetName(&name, rotate));
  EXPECT(name != nullptr && std::strcmp(name, "rotate") == 0);
  CHECK_CU(cuFuncGetName(&name, add_one));
  EXPECT(std::strcmp(name, "add_one") == 0);
  EXPECT(cuFuncGetName(nullptr, rotate) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuFuncGetName(&name, reinterpret_cast<CUfunction>(&name)) == CUDA_ERROR_INVALID_HANDLE);
  // A forged handle is looked up, not read at: one pointing at an unreadable page is refused too.
  void* const unreadable = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(unreadable != MAP_FAILED);
  EXPECT(cuFuncGetName(&name, static_cast<CUfunction>(unreadable)) == CUDA_ERROR_INVALID_HANDLE);
  munmap(unreadable, 4096);
  const char* runtime_name = nullptr;
  CHECK_CUDA(cudaFuncGetName(&runtime_name, reinterpret_cast<const void*>(Tile)));
  EXPECT(std::string(runtime_name) == "_Z4TilePj");

  int value = 0;
  CHECK_CU(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, tile));
  EXPECT(value == 8192);
  CHECK_CU(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, tile));
  EXPECT(value == 256);
  CHECK_CU(cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 12345));
  CHECK_CU(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, add_one));
  EXPECT(value == 12345);
  EXPECT(cuFuncSetAttribute(add_one, CU_FUNC_ATTRIBUTE_NUM_REGS, 8) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuFuncSetAttribute(reinterpret_cast<CUfunction>(&value),
                            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            0) == CUDA_ERROR_INVALID_HANDLE);

  CHECK_CU(cuFuncSetCacheConfig(add_one, CU_FUNC_CACHE_PREFER_SHARED));
  CHECK_CU(cuFuncSetCacheConfig(add_one, CU_FUNC_CACHE_PREFER_EQUAL));
  EXPECT(cuFuncSetCacheConfig(add_one, static_cast<CUfunc_cache>(7)) == CUDA_ERROR_INVALID_VALUE);
  CHECK_CUDA(cudaFuncSetCacheConfig(Tile, cudaFuncCachePreferL1));
  EXPECT(cudaFuncSetCacheConfig(Tile, static_cast<cudaFuncCache>(7)) == cudaErrorInvalidValue);
  EXPECT(cudaGetLastError() == cudaErrorInvalidValue);
}

int calls_of_shared_size = 0;
int largest_size_asked = 0;
size_t CUDA_CB SharedOfBlockSize(int block_size) {
  ++calls_of_shared_size;
  if (block_size > largest_size_asked) largest_size_asked = block_size;
  return size_t(block_size) * 16;
}

// cuOccupancyMaxPotentialBlockSize's definition: of the block sizes at warp granularity (and
// the limit), the one with the most resident threads per multiprocessor, the largest among
// equals.
void ExpectBestBlockSize(int block_size, int min_grid_size, size_t (*shared_of)(int), size_t shared,
                         int limit) {
  int sms = 0;
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  int blocks_at_best = 0;
  CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_at_best, tile, block_size,
                                                       shared_of ? shared_of(block_size) : shared));
  EXPECT(block_size > 0 && block_size <= limit && blocks_at_best > 0);
  EXPECT(min_grid_size == blocks_at_best * sms);
  int warp = 0;
  CHECK_CU(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
  std::vector<int> sizes = {limit};
  for (int size = warp; size < limit; size += warp) sizes.push_back(size);
  for (int size : sizes) {
    int blocks = 0;
    CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile, size,
                                                         shared_of ? shared_of(size) : shared));
    EXPECT(blocks * size <= blocks_at_best * block_size);
    if (blocks * size == blocks_at_best * block_size) EXPECT(size <= block_size);
  }
}

size_t RuntimeSharedOfBlockSize(int block_size) { return size_t(block_size) * 16; }

void TestOccupancy() {
  // The PTX kernel and its runtime twin ask the same of a multiprocessor.
  for (int block_size : {32, 100, 128, 256}) {
    for (size_t shared : {size_t{0}, size_t{1000}, size_t{20000}}) {
      int driver = -1, runtime = -2, with_flags = -3;
      CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&driver, tile, block_size, shared));
      CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
          &with_flags, tile, block_size, shared, CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
      CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&runtime, Tile, block_size, shared));
      EXPECT(driver > 0 && driver == runtime && driver == with_flags);
    }
  }
  int blocks = 0;
  EXPECT(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, tile, 64, 0, 0x8) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, tile, 64, 0) ==
         CUDA_ERROR_INVALID_VALUE);
  // Above the kernel's .maxntid the documentation says nothing: the emulated GPU counts none,
  // NVIDIA's driver a positive number (H100, driver 580). Printed for the GPU check's record.
  CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile, 512, 0));
  std::printf("driver_kernels: blocks per multiprocessor of 512 threads above .maxntid 256: %d\n",
              blocks);

  // Suggested block sizes: as the runtime's, and by definition.
  int min_grid = 0, block_size = 0, runtime_min_grid = 0, runtime_block_size = 0;
  CHECK_CU(cuOccupancyMaxPotentialBlockSize(&min_grid, &block_size, tile, nullptr, 30000, 0));
  CHECK_CUDA(
      cudaOccupancyMaxPotentialBlockSize(&runtime_min_grid, &runtime_block_size, Tile, 30000, 0));
  EXPECT(min_grid == runtime_min_grid && block_size == runtime_block_size);
  ExpectBestBlockSize(block_size, min_grid, nullptr, 30000, 256);

  CHECK_CU(cuOccupancyMaxPotentialBlockSizeWithFlags(&min_grid, &block_size, tile,
                                                     SharedOfBlockSize, 0, 200,
                                                     CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
  EXPECT(calls_of_shared_size > 0 && largest_size_asked == 200);  // called here, up to the limit
  CHECK_CUDA(cudaOccupancyMaxPotentialBlockSizeVariableSMem(&runtime_min_grid, &runtime_block_size,
                                                            Tile, RuntimeSharedOfBlockSize, 200));
  EXPECT(min_grid == runtime_min_grid && block_size == runtime_block_size);
  ExpectBestBlockSize(block_size, min_grid, SharedOfBlockSize, 0, 200);
  EXPECT(cuOccupancyMaxPotentialBlockSize(nullptr, &block_size, tile, nullptr, 0, 0) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuOccupancyMaxPotentialBlockSizeWithFlags(&min_grid, &block_size, tile, nullptr, 0, 0,
                                                   0x8) == CUDA_ERROR_INVALID_VALUE);

  // Dynamic shared memory left for n blocks: as the runtime's, and the most that keeps n
  // resident (or all the kernel may have).
  int max_dynamic = 0;
  CHECK_CU(cuFuncGetAttribute(&max_dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, tile));
  for (int n : {1, 2, 5}) {
    size_t available = 0, runtime_available = 1;
    CHECK_CU(cuOccupancyAvailableDynamicSMemPerBlock(&available, tile, n, 128));
    CHECK_CUDA(cudaOccupancyAvailableDynamicSMemPerBlock(&runtime_available, Tile, n, 128));
    EXPECT(available == runtime_available && available <= size_t(max_dynamic));
    CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile, 128, available));
    EXPECT(blocks >= n);
    if (available < size_t(max_dynamic)) {
      CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, tile, 128, available + 1));
      EXPECT(blocks < n);
    }
  }
  size_t available = 0;
  EXPECT(cuOccupancyAvailableDynamicSMemPerBlock(&available, tile, 1000, 128) ==
         CUDA_ERROR_INVALID_VALUE);  // never that many at once
  EXPECT(cuOccupancyAvailableDynamicSMemPerBlock(&available, tile, 0, 128) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuOccupancyAvailableDynamicSMemPerBlock(nullptr, tile, 1, 128) ==
         CUDA_ERROR_INVALID_VALUE);
}

void ExpectRotated(CUdeviceptr b, unsigned n, unsigned threads, unsigned salt) {
  std::vector<unsigned> host(n);
  CHECK_CU(cuMemcpyDtoH(host.data(), b, n * sizeof(unsigned)));
  for (unsigned i = 0; i < n; ++i) EXPECT(host[i] == ((i + threads) % n) * 3 + salt);
}

void TestLaunches() {
  constexpr unsigned kBlocks = 4, kThreads = 64, kN = kBlocks * kThreads;
  CUdeviceptr a = 0, b = 0;
  CHECK_CU(cuMemAlloc(&a, kN * sizeof(unsigned)));
  CHECK_CU(cuMemAlloc(&b, kN * sizeof(unsigned)));
  unsigned n = kN, salt = 7;
  void* params[] = {&a, &b, &n, &salt};

  CHECK_CU(cuLaunchCooperativeKernel(rotate, kBlocks, 1, 1, kThreads, 1, 1, 0, nullptr, params));
  CHECK_CU(cuCtxSynchronize());
  ExpectRotated(b, kN, kThreads, 7);

  // cuLaunchKernelEx: cooperative, with hints that change nothing, on a stream (a blocking one:
  // its launches wait for the memsets below, which are asynchronous on the default stream).
  CUstream stream;
  CHECK_CU(cuStreamCreate(&stream, CU_STREAM_DEFAULT));
  CUlaunchAttribute attributes[4] = {};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attributes[0].value.cooperative = 1;
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attributes[1].value.priority = -1;
  attributes[2].id = CU_LAUNCH_ATTRIBUTE_IGNORE;
  attributes[3].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;  // one block: no cluster
  attributes[3].value.clusterDim.x = attributes[3].value.clusterDim.y = 1;
  attributes[3].value.clusterDim.z = 1;
  CUlaunchConfig config = {};
  config.gridDimX = kBlocks;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = config.blockDimZ = 1;
  config.hStream = stream;
  config.attrs = attributes;
  config.numAttrs = 4;
  salt = 11;
  CHECK_CU(cuLaunchKernelEx(&config, rotate, params, nullptr));
  CHECK_CU(cuStreamSynchronize(stream));
  ExpectRotated(b, kN, kThreads, 11);

  // Parameters packed in `extra`, no attributes.
  struct {
    CUdeviceptr data;
    unsigned n;
  } packed = {a, kN};
  size_t packed_size = sizeof(packed);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &packed_size, CU_LAUNCH_PARAM_END};
  CUlaunchConfig plain = config;
  plain.gridDimX = (kN + 127) / 128;
  plain.blockDimX = 128;
  plain.attrs = nullptr;
  plain.numAttrs = 0;
  CHECK_CU(cuMemsetD32(a, 5, kN));
  CHECK_CU(cuLaunchKernelEx(&plain, add_one, nullptr, extra));
  CHECK_CU(cuStreamSynchronize(stream));
  std::vector<unsigned> host(kN);
  CHECK_CU(cuMemcpyDtoH(host.data(), a, kN * sizeof(unsigned)));
  for (unsigned v : host) EXPECT(v == 6);
  EXPECT(cuLaunchKernelEx(&plain, add_one, params, extra) == CUDA_ERROR_INVALID_VALUE);

  // Too many blocks to be resident at once: refused at the call, in both launch forms.
  int per_sm = 0, sms = 0;
  CHECK_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rotate, kThreads, 0));
  CHECK_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  const unsigned too_many = unsigned(per_sm * sms + 1);
  EXPECT(cuLaunchCooperativeKernel(rotate, too_many, 1, 1, kThreads, 1, 1, 0, nullptr, params) ==
         CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  config.gridDimX = too_many;
  EXPECT(cuLaunchKernelEx(&config, rotate, params, nullptr) ==
         CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  config.gridDimX = kBlocks;

  // Attributes Tally refuses, ids cuda.h does not know, malformed configurations.
  CUlaunchAttribute refused = {};
  refused.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  config.attrs = &refused;
  config.numAttrs = 1;
  EXPECT(cuLaunchKernelEx(&config, rotate, params, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  // Clusters need compute capability 9.0 (e2e_clusters runs them there); a 0 dimension or one
  // that does not divide the grid is refused on any device.
  refused.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  refused.value.clusterDim.x = 2;
  refused.value.clusterDim.y = refused.value.clusterDim.z = 1;
  int cc_major = 0;
  CHECK_CU(cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  if (cc_major < 9) {
    EXPECT(cuLaunchKernelEx(&config, rotate, params, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  } else {
    refused.value.clusterDim.x = 0;
    EXPECT(cuLaunchKernelEx(&config, rotate, params, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
    refused.value.clusterDim.x = kBlocks + 1;
    EXPECT(cuLaunchKernelEx(&config, rotate, params, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  }
  refused.id = static_cast<CUlaunchAttributeID>(999);
  EXPECT(cuLaunchKernelEx(&config, rotate, params, nullptr) == CUDA_ERROR_INVALID_VALUE);
  config.attrs = nullptr;
  EXPECT(cuLaunchKernelEx(&config, rotate, params, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuLaunchKernelEx(nullptr, rotate, params, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuLaunchCooperativeKernel(reinterpret_cast<CUfunction>(&n), 1, 1, 1, 1, 1, 1, 0, nullptr,
                                   params) == CUDA_ERROR_INVALID_HANDLE);
  // None of the refused launches ran or left an error behind.
  CHECK_CU(cuCtxSynchronize());
  ExpectRotated(b, kN, kThreads, 11);

  CHECK_CU(cuStreamDestroy(stream));
  CHECK_CU(cuMemFree(a));
  CHECK_CU(cuMemFree(b));
}

}  // namespace

int main() {
  const CUdevice device = UsePrimaryContext();
  CUmodule module, add_one_module;
  rotate = LoadFunction(&module, kPtx, "rotate");
  CHECK_CU(cuModuleGetFunction(&tile, module, "tile"));
  add_one = LoadFunction(&add_one_module, kAddOnePtx, "add_one");

  TestEntryPoints();
  TestFunctionAttributes();
  TestOccupancy();
  TestLaunches();

  CHECK_CU(cuModuleUnload(add_one_module));
  CHECK_CU(cuModuleUnload(module));
  CHECK_CU(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_kernels: OK\n");
  return 0;
}
