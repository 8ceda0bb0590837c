// Launch validation, module and function entry points, fatbin loading, kernels in stream
// order, and faults: bad accesses, divergent barriers and traps end the launch with a sticky
// error instead of crashing or hanging; unsupported PTX fails the load naming the instruction.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

// A fresh context for tests that poison their context with a sticky error.
// What becomes of kernel `k` of `body`: the load's error, else what its attributes answer (a
// kernel the emulated GPU cannot run is refused there and at its launches, not its module).
CUresult KernelResult(const char* body) {
  std::string ptx = std::string(".version 8.0\n.target sm_80\n.address_size 64\n") + body;
  CUmodule module = nullptr;
  CUresult result = Emu().cuModuleLoadData(&module, ptx.c_str());
  if (result != CUDA_SUCCESS) return result;
  CUfunction kernel = nullptr;
  result = Emu().cuModuleGetFunction(&kernel, module, "k");
  int threads = 0;
  if (result == CUDA_SUCCESS) {
    result = Emu().cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel);
  }
  Emu().cuModuleUnload(module);
  return result;
}

TEST_CASE("launch shapes, shared memory and parameters are validated") {
  CUfunction vec_add = BasicKernel("vec_add");
  CUdeviceptr a = Zeros<float>(4);
  int n = 4;
  void* args[] = {&a, &a, &a, &n};
  auto launch = [&](unsigned gx, unsigned bx, unsigned by, unsigned shared) {
    return Emu().cuLaunchKernel(vec_add, gx, 1, 1, bx, by, 1, shared, nullptr, args, nullptr);
  };
  CHECK(launch(0, 32, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(launch(1, 2048, 1, 0) == CUDA_ERROR_INVALID_VALUE);
  CHECK(launch(1, 64, 32, 0) == CUDA_ERROR_INVALID_VALUE);  // 2048 threads
  CHECK(launch(1, 32, 1, 200 * 1024) == CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuLaunchKernel(vec_add, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuLaunchKernel(reinterpret_cast<CUfunction>(0x99), 1, 1, 1, 32, 1, 1, 0, nullptr,
                             args, nullptr) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(Emu().cuLaunchKernel(vec_add, 1, 1, 1, 32, 1, 1, 0, reinterpret_cast<CUstream>(0x77), args,
                             nullptr) == CUDA_ERROR_INVALID_HANDLE);
  EMU_OK(launch(1, 32, 1, 0));
  EMU_OK(Emu().cuCtxSynchronize());
}

TEST_CASE("parameters through `extra` as one buffer") {
  std::vector<float> x = {1, 2, 3, 4};
  CUdeviceptr a = Upload(x), c = Zeros<float>(4);
  struct {
    CUdeviceptr a, b, c;
    int n;
  } params = {a, a, c, 4};
  size_t size = sizeof(params);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &params, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  CUfunction vec_add = BasicKernel("vec_add");
  EMU_OK(Emu().cuLaunchKernel(vec_add, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra));
  EMU_OK(Emu().cuCtxSynchronize());
  CHECK(Download<float>(c, 4) == std::vector<float>{2, 4, 6, 8});
  size = 8;  // too small for the kernel's 28-byte parameter buffer
  CHECK(Emu().cuLaunchKernel(vec_add, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra) ==
        CUDA_ERROR_INVALID_VALUE);
  void* args[] = {&a, &a, &c, &params.n};
  size = sizeof(params);
  CHECK(Emu().cuLaunchKernel(vec_add, 1, 1, 1, 32, 1, 1, 0, nullptr, args, extra) ==
        CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("function attributes and occupancy") {
  CUfunction block_sum = BasicKernel("block_sum");
  int value = 0;
  EMU_OK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, block_sum));
  CHECK(value == 1024);
  EMU_OK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, block_sum));
  CHECK(value == 1024);
  EMU_OK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_PTX_VERSION, block_sum));
  CHECK(value >= 80);
  CHECK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX, block_sum) ==
        CUDA_ERROR_INVALID_VALUE);
  CUfunction reverse = BasicKernel("reverse_dynamic");
  EMU_OK(Emu().cuFuncSetAttribute(reverse, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                  100 * 1024));
  EMU_OK(
      Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, reverse));
  CHECK(value == 100 * 1024);
  CHECK(Emu().cuFuncSetAttribute(reverse, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 1 << 20) == CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuFuncSetAttribute(reverse, CU_FUNC_ATTRIBUTE_NUM_REGS, 3) ==
        CUDA_ERROR_INVALID_VALUE);
  int blocks = 0;
  EMU_OK(Emu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reverse, 256, 0));
  CHECK(blocks == 8);
  EMU_OK(Emu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, block_sum, 128, 0));
  CHECK(blocks == 16);
  EMU_OK(Emu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reverse, 32, 80 * 1024));
  CHECK(blocks == 2);
}

TEST_CASE("cooperative launches are limited to the resident blocks; cuLaunchKernelEx") {
  std::vector<float> x(256 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  CUdeviceptr a = Upload(x), c = Zeros<float>(x.size());
  int n = static_cast<int>(x.size());
  void* args[] = {&a, &a, &c, &n};
  CUfunction vec_add = BasicKernel("vec_add");
  int per_sm = 0, sms = 0;
  EMU_OK(Emu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, vec_add, 256, 0));
  EMU_OK(Emu().cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  int cooperative = 0;
  EMU_OK(Emu().cuDeviceGetAttribute(&cooperative, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0));
  CHECK(cooperative == 1);
  const unsigned resident = static_cast<unsigned>(per_sm * sms);  // 8 x 8 by default
  REQUIRE(resident == 64);
  EMU_OK(Emu().cuLaunchCooperativeKernel(vec_add, resident, 1, 1, 256, 1, 1, 0, nullptr, args));
  EMU_OK(Emu().cuCtxSynchronize());
  std::vector<float> sums = Download<float>(c, x.size());
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(sums[i] == 2 * x[i]);
  CHECK(Emu().cuLaunchCooperativeKernel(vec_add, resident + 1, 1, 1, 256, 1, 1, 0, nullptr, args) ==
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  CHECK(Emu().cuLaunchCooperativeKernel(vec_add, 1, 1, 1, 256, 1, 1, 0, nullptr, nullptr) ==
        CUDA_ERROR_INVALID_VALUE);
  // The same grid without cooperation is just a launch.
  EMU_OK(Emu().cuLaunchKernel(vec_add, resident + 1, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));

  CUlaunchAttribute attributes[2] = {};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;  // a hint: accepted
  attributes[0].value.priority = 1;
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attributes[1].value.cooperative = 1;
  CUlaunchConfig config{};
  config.gridDimX = resident;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256;
  config.blockDimY = config.blockDimZ = 1;
  config.attrs = attributes;
  config.numAttrs = 2;
  EMU_OK(Emu().cuMemsetD32_v2(c, 0, x.size()));
  EMU_OK(Emu().cuLaunchKernelEx(&config, vec_add, args, nullptr));
  EMU_OK(Emu().cuCtxSynchronize());
  sums = Download<float>(c, x.size());
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(sums[i] == 2 * x[i]);
  config.gridDimX = resident + 1;
  CHECK(Emu().cuLaunchKernelEx(&config, vec_add, args, nullptr) ==
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  attributes[1].value.cooperative = 0;
  EMU_OK(Emu().cuLaunchKernelEx(&config, vec_add, args, nullptr));
  attributes[1].id = static_cast<CUlaunchAttributeID>(999);
  CHECK(Emu().cuLaunchKernelEx(&config, vec_add, args, nullptr) == CUDA_ERROR_INVALID_VALUE);
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attributes[1].value.clusterDim.x = 2;
  attributes[1].value.clusterDim.y = attributes[1].value.clusterDim.z = 1;
  CHECK(Emu().cuLaunchKernelEx(&config, vec_add, args, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  attributes[1].value.clusterDim.x = 1;
  EMU_OK(Emu().cuLaunchKernelEx(&config, vec_add, args, nullptr));
  config.attrs = nullptr;
  CHECK(Emu().cuLaunchKernelEx(&config, vec_add, args, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(Emu().cuLaunchKernelEx(nullptr, vec_add, args, nullptr) == CUDA_ERROR_INVALID_VALUE);
  EMU_OK(Emu().cuCtxSynchronize());
}

TEST_CASE("modules: lookups, unload, fatbins") {
  CUfunction function = nullptr;
  CHECK(Emu().cuModuleGetFunction(&function, BasicModule(), "no_such_kernel") ==
        CUDA_ERROR_NOT_FOUND);
  CUfunction first = BasicKernel("vec_add");
  CHECK(BasicKernel("vec_add") == first);  // the same handle every time

  std::string fatbin = ReadKernelFile("basic.fatbin");
  CUmodule module = nullptr;
  EMU_OK(Emu().cuModuleLoadData(&module, fatbin.data()));
  EMU_OK(Emu().cuModuleGetFunction(&function, module, "collatz"));
  EMU_OK(Emu().cuModuleUnload(module));
  // What __cudaRegisterFatBinary receives: a __fatBinC_Wrapper_t pointing at the fatbin.
  struct {
    int magic = 0x466243B1;
    int version = 1;
    const void* data;
    void* filename_or_fatbins = nullptr;
  } wrapper;
  wrapper.data = fatbin.data();
  EMU_OK(Emu().cuModuleLoadData(&module, &wrapper));
  EMU_OK(Emu().cuModuleGetFunction(&function, module, "vec_add"));
  EMU_OK(Emu().cuModuleUnload(module));
  CHECK(Emu().cuModuleUnload(module) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(Emu().cuModuleGetFunction(&function, module, "collatz") == CUDA_ERROR_INVALID_HANDLE);
  int value = 0;
  CHECK(Emu().cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, function) ==
        CUDA_ERROR_INVALID_HANDLE);

  const char elf[] =
      "\x7f"
      "ELF rest of a cubin";
  CHECK(Emu().cuModuleLoadData(&module, elf) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(Emu().cuModuleLoadData(&module, nullptr) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("unsupported PTX makes its kernel unusable, malformed PTX fails the load") {
  // A construct the emulated GPU does not implement: the kernel is refused with
  // CUDA_ERROR_INVALID_PTX ("a PTX JIT compilation failed"), its module loads.
  CHECK(KernelResult(".visible .entry k(.param .u64 p) {\n .reg .b32 %r<3>;\n"
                " vset4.u32.u32.lt %r1, %r2, %r2, %r2;\n ret;\n}\n") == CUDA_ERROR_INVALID_PTX);
  CHECK(KernelResult(".visible .entry k() {\n .reg .b32 %r<3>;\n"
                " mad24.lo.sat.s32 %r1, %r2, %r2, %r2;\n ret;\n}\n") == CUDA_ERROR_INVALID_PTX);
  CHECK(KernelResult(".visible .entry k() {\n .reg .b32 %r<3>;\n"
                " vadd4.u32.u32.u32.add.sat %r1, %r2, %r2, %r2;\n ret;\n}\n") ==
        CUDA_ERROR_INVALID_PTX);
  CHECK(KernelResult(".visible .entry k() {\n .reg .b16 %h<3>;\n"
                " add.rz.f16 %h1, %h2, %h2;\n ret;\n}\n") == CUDA_ERROR_INVALID_PTX);
  CHECK(KernelResult(".visible .entry k() {\n .reg .b32 %r<3>;\n"
                " min.xorsign.abs.f32 %r1, %r2, %r2;\n ret;\n}\n") == CUDA_ERROR_INVALID_PTX);
  // Malformed PTX (an undeclared register) fails the module's load itself.
  CUmodule malformed = nullptr;
  CHECK(Emu().cuModuleLoadData(&malformed, ".version 8.0\n.target sm_80\n.address_size 64\n"
                                           ".visible .entry k() {\n .reg .b32 %r<3>;\n"
                                           " mov.u32 %r1, %r9;\n ret;\n}\n") ==
        CUDA_ERROR_INVALID_PTX);
  // Matrix forms the emulator does not implement: sparse, Volta's m8n8k4 .f16, sub-byte wmma,
  // .satfinite on floating point, ldmatrix of other shapes.
  for (const char* matrix :
       {"mma.sp.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r1, %r2}, "
        "{%r3, %r4}, {%f1, %f2, %f3, %f4}, %r1, 0x0;",
        "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, "
        "{%r1, %r2}, {%r3, %r4}, {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};",
        "wmma.load.a.sync.aligned.row.m8n8k32.s4 {%r1}, [%rd1];",
        "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32.satfinite {%f1, %f2, %f3, %f4, %f5, %f6, "
        "%f7, %f8}, {%r1, %r1, %r1, %r1, %r1, %r1, %r1, %r1}, {%r1, %r1, %r1, %r1, %r1, %r1, %r1, "
        "%r1}, {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8};",
        "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r1, %r2}, [%rd1];"}) {
    INFO(matrix);
    std::string body = ".visible .entry k() {\n .reg .f32 %f<9>;\n .reg .b32 %r<5>;\n"
                       " .reg .b64 %rd<2>;\n " + std::string(matrix) + "\n ret;\n}\n";
    CHECK(KernelResult(body.c_str()) == CUDA_ERROR_INVALID_PTX);
  }
  CHECK(KernelResult(".visible .entry k() {\n bra NOWHERE;\n}\n") == CUDA_ERROR_INVALID_PTX);
  CHECK(KernelResult(".visible .entry k( {\n") == CUDA_ERROR_INVALID_PTX);
  std::string newer =
      ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k() { ret; }\n";
  CUmodule module_for_newer_gpu = nullptr;
  CHECK(Emu().cuModuleLoadData(&module_for_newer_gpu, newer.c_str()) == CUDA_ERROR_INVALID_PTX);

  std::string ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry k() {\n .reg .b32 %r<3>;\n"
      " testp.finite.f32 %r1, %r2;\n ret;\n}\n";
  // The module loads; its kernel's launches fail.
  CUmodule module = nullptr;
  EMU_OK(Emu().cuModuleLoadData(&module, ptx.c_str()));
  CUfunction kernel = nullptr;
  EMU_OK(Emu().cuModuleGetFunction(&kernel, module, "k"));
  CHECK(Emu().cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr) ==
        CUDA_ERROR_INVALID_PTX);
  int blocks = 0;
  CHECK(Emu().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, 32, 0) ==
        CUDA_ERROR_INVALID_PTX);
  EMU_OK(Emu().cuModuleUnload(module));
}

TEST_CASE("extended-precision add and subtract through the carry flag") {
  EnsureContext();
  std::string ptx =
      ".version 8.0\n.target sm_80\n.address_size 64\n"
      ".visible .entry wide(.param .u64 p) {\n"
      " .reg .b32 %r<8>;\n .reg .b64 %rd<2>;\n"
      " ld.param.u64 %rd1, [p];\n"
      " ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];\n"
      " add.cc.u32 %r5, %r1, %r3;\n addc.u32 %r6, %r2, %r4;\n"
      " st.global.v2.u32 [%rd1+16], {%r5, %r6};\n"
      " sub.cc.u32 %r5, %r1, %r3;\n subc.u32 %r6, %r2, %r4;\n"
      " st.global.v2.u32 [%rd1+24], {%r5, %r6};\n"
      " ret;\n}\n";
  CUmodule module = nullptr;
  EMU_OK(Emu().cuModuleLoadData(&module, ptx.c_str()));
  CUfunction wide = nullptr;
  EMU_OK(Emu().cuModuleGetFunction(&wide, module, "wide"));
  std::vector<uint64_t> values = {0x00000001ffffffffull, 0x00000002fffffffeull, 0, 0};
  CUdeviceptr data = Upload(values);
  EMU_OK(LaunchAndWait(wide, 1, 1, {&data}));
  std::vector<uint64_t> result = Download<uint64_t>(data, 4);
  CHECK(result[2] == values[0] + values[1]);
  CHECK(result[3] == values[0] - values[1]);
  EMU_OK(Emu().cuModuleUnload(module));
}

TEST_CASE("kernels run in stream order with copies and events") {
  CUstream stream = nullptr;
  EMU_OK(Emu().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::vector<float> ones(256, 1.0f);
  CUdeviceptr a = Upload(ones), b = Zeros<float>(256);
  std::vector<float> result(256, 0);
  int n = 256;
  void* args[] = {&a, &a, &b, &n};
  void* again[] = {&b, &b, &a, &n};
  CUfunction vec_add = BasicKernel("vec_add");
  CUevent done = nullptr;
  EMU_OK(Emu().cuEventCreate(&done, 0));
  EMU_OK(Emu().cuLaunchKernel(vec_add, 2, 1, 1, 128, 1, 1, 0, stream, args, nullptr));   // b = 2
  EMU_OK(Emu().cuLaunchKernel(vec_add, 2, 1, 1, 128, 1, 1, 0, stream, again, nullptr));  // a = 4
  EMU_OK(Emu().cuMemcpyDtoHAsync_v2(result.data(), a, 256 * 4, stream));
  EMU_OK(Emu().cuEventRecord(done, stream));
  EMU_OK(Emu().cuEventSynchronize(done));
  CHECK(result == std::vector<float>(256, 4.0f));
  EMU_OK(Emu().cuEventDestroy_v2(done));
  EMU_OK(Emu().cuStreamDestroy_v2(stream));
}

TEST_CASE("an out-of-bounds access is a sticky ILLEGAL_ADDRESS") {
  ScratchContext scratch;
  CUdeviceptr data = Zeros<int>(4);
  int stride = 1000;
  CHECK(LaunchAndWait(scratch.Kernel("out_of_bounds"), 1, 32, {&data, &stride}) ==
        CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr other = 0;
  CHECK(Emu().cuMemAlloc_v2(&other, 16) == CUDA_ERROR_ILLEGAL_ADDRESS);
  CHECK(Emu().cuCtxSynchronize() == CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_CASE("a barrier that can never complete is reported, not a hang") {
  ScratchContext scratch;
  CHECK(LaunchAndWait(scratch.Kernel("divergent_barrier"), 2, 64, {}) == CUDA_ERROR_LAUNCH_FAILED);
}

TEST_CASE("trap ends the launch") {
  ScratchContext scratch;
  std::vector<int> flag = {1};
  CUdeviceptr dflag = Upload(flag);
  CHECK(LaunchAndWait(scratch.Kernel("traps"), 4, 32, {&dflag}) == CUDA_ERROR_LAUNCH_FAILED);
}

TEST_CASE("device printf writes to stdout") {
  CUfunction prints = BasicKernel("prints");
  char path[] = "/tmp/tally_emu_printf_XXXXXX";
  int file = mkstemp(path);
  REQUIRE(file >= 0);
  std::fflush(stdout);
  int saved = dup(1);
  dup2(file, 1);
  int value = 42;
  CUresult result = LaunchAndWait(prints, 1, 32, {&value});
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(file);
  EMU_OK(result);
  std::ifstream captured(path);
  std::stringstream text;
  text << captured.rdbuf();
  unlink(path);
  CHECK(text.str() ==
        "thread 0: 42  1.50 str -5 ff|z\n"
        "thread 1: 42  1.50 str -5 ff|z\n");
}

TEST_CASE("a failed device assert is a sticky CUDA_ERROR_ASSERT") {
  ScratchContext scratch;
  std::vector<int> data(32, 0);
  data[5] = 3;
  CUdeviceptr ddata = Upload(data);
  CHECK(LaunchAndWait(scratch.Kernel("asserts"), 1, 32, {&ddata}) == CUDA_ERROR_ASSERT);
  CHECK(Emu().cuCtxSynchronize() == CUDA_ERROR_ASSERT);
}

// Not a pass/fail criterion: reports the interpreter's speed on an ALU loop so regressions are
// visible in the test log. nvcc unrolls the loop 4x into 15 instructions (3.75 per iteration).
TEST_CASE("interpreter speed on an arithmetic loop") {
  const int blocks = 64, threads = 256, iterations = 2000;
  CUdeviceptr out = Zeros<unsigned>(blocks * threads);
  int count = iterations;
  auto start = std::chrono::steady_clock::now();
  EMU_OK(LaunchAndWait(BasicKernel("spin"), blocks, threads, {&out, &count}));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double lane_instructions = 3.75 * iterations * blocks * threads;
  WARN("spin: " << lane_instructions / seconds / 1e6 << " M lane-instructions/s");
  // A memory-bound kernel: 4M-element vec_add (22 PTX instructions and 12 bytes per thread).
  const int n = 1 << 22;
  CUdeviceptr a = Zeros<float>(n), c = Zeros<float>(n);
  start = std::chrono::steady_clock::now();
  EMU_OK(LaunchAndWait(BasicKernel("vec_add"), n / 256, 256, {&a, &a, &c, const_cast<int*>(&n)}));
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("vec_add: " << n / seconds / 1e6 << " M elements/s, " << 12.0 * n / seconds / 1e9
                   << " GB/s, " << 22.0 * n / seconds / 1e6 << " M lane-instructions/s");
  EMU_OK(Emu().cuMemFree_v2(a));
  EMU_OK(Emu().cuMemFree_v2(c));

  std::vector<unsigned> result = Download<unsigned>(out, blocks * threads);
  for (unsigned i = 0; i < 4; ++i) {
    unsigned x = i, y = 0;
    for (int k = 0; k < iterations; ++k) {
      x = x * 1664525u + 1013904223u;
      y ^= x >> 7;
    }
    CHECK(result[i] == x + y);
  }
}

}  // namespace
}  // namespace tally::emu::testing
