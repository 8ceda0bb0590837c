// The JIT linker (cuLinkCreate ... cuLinkDestroy): PTX becomes the emulated GPU's machine code,
// which cuModuleLoadData loads and whose kernels run; PTX that does not compile fails at the link,
// with the reason in the error log; the link takes no device memory; a damaged image is refused
// at the load.
#include <cstring>
#include <string>
#include <vector>

#include "emulator/tests/kernel_util.h"

namespace tally::emu::testing {
namespace {

// A link with an error log of its own; destroyed with the test.
class Link {
 public:
  Link() {
    EnsureContext();
    EMU_OK(Emu().cuLinkCreate_v2(2, options_, values_, &state_));
  }
  ~Link() { Emu().cuLinkDestroy(state_); }
  CUresult AddPtx(const std::string& ptx, const char* name = "test.ptx") {
    return Emu().cuLinkAddData_v2(state_, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()),
                                  ptx.size() + 1, name, 0, nullptr, nullptr);
  }
  // The machine code of what was added, as the link state owns it.
  const char* CompleteInPlace() {
    void* image = nullptr;
    EMU_OK(Emu().cuLinkComplete(state_, &image, nullptr));
    return static_cast<const char*>(image);
  }
  // ... copied out of the link state.
  std::string Complete() {
    void* image = nullptr;
    size_t size = 0;
    EMU_OK(Emu().cuLinkComplete(state_, &image, &size));
    return std::string(static_cast<const char*>(image), size);
  }
  CUlinkState state() const { return state_; }
  std::string log() const { return log_; }
  // What the driver wrote back through CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES.
  size_t log_filled() const { return reinterpret_cast<uintptr_t>(values_[1]); }

 private:
  char log_[1024] = {};
  CUjit_option options_[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values_[2] = {log_, reinterpret_cast<void*>(uintptr_t{sizeof(log_)})};
  CUlinkState state_ = nullptr;
};

// vec_add of the module in `image` adds two vectors correctly.
void CheckVecAdd(const void* image) {
  CUmodule module = nullptr;
  EMU_OK(Emu().cuModuleLoadData(&module, image));
  CUfunction vec_add = nullptr;
  EMU_OK(Emu().cuModuleGetFunction(&vec_add, module, "vec_add"));
  const int n = 300;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.0f * static_cast<float>(i);
  }
  CUdeviceptr da = Upload(a), db = Upload(b), dc = Zeros<float>(n);
  int count = n;
  EMU_OK(LaunchAndWait(vec_add, 3, 128, {&da, &db, &dc, &count}));
  const std::vector<float> c = Download<float>(dc, n);
  for (int i = 0; i < n; ++i) REQUIRE(c[i] == 3.0f * static_cast<float>(i));
  for (CUdeviceptr p : {da, db, dc}) EMU_OK(Emu().cuMemFree_v2(p));
  EMU_OK(Emu().cuModuleUnload(module));
}

CUresult LoadResult(const std::string& image) {
  CUmodule module = nullptr;
  const CUresult result = Emu().cuModuleLoadData(&module, image.data());
  if (result == CUDA_SUCCESS) Emu().cuModuleUnload(module);
  return result;
}

TEST_CASE("linked PTX is machine code that loads and runs, also after the link is gone") {
  std::string image;
  {
    Link link;
    EMU_OK(link.AddPtx(ReadKernelFile("basic.ptx")));
    image = link.Complete();
    CHECK(link.Complete() == image);  // completing again gives the same image
  }
  CHECK(image.size() > 32);
  CHECK(image.find(".entry vec_add") != std::string::npos);  // it is the PTX behind a header
  CheckVecAdd(image.data());
}

TEST_CASE("the image a link state owns loads before the state is destroyed, more than once") {
  Link link;
  EMU_OK(link.AddPtx(ReadKernelFile("basic.ptx")));
  const char* image = link.CompleteInPlace();
  CheckVecAdd(image);
  CheckVecAdd(image);  // each load a module of its own
}

// The device memory free now.
size_t FreeBytes() {
  size_t free = 0;
  size_t total = 0;
  EMU_OK(Emu().cuMemGetInfo_v2(&free, &total));
  return free;
}

TEST_CASE("a link takes no device memory: a module's variables are placed when it is loaded") {
  const size_t before = FreeBytes();
  Link link;
  EMU_OK(
      link.AddPtx(".version 8.0\n.target sm_80\n.address_size 64\n"
                  ".visible .global .align 4 .b8 table[1048576];\n"
                  ".visible .entry k() {\n  ret;\n}\n"));
  const char* image = link.CompleteInPlace();
  CHECK(FreeBytes() == before);
  CUmodule module = nullptr;
  EMU_OK(Emu().cuModuleLoadData(&module, image));
  CHECK(FreeBytes() + 1048576 <= before);
  EMU_OK(Emu().cuModuleUnload(module));
  CHECK(FreeBytes() == before);
}

TEST_CASE("PTX that does not compile fails at the link, the reason in the error log") {
  Link link;
  CHECK(link.AddPtx(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() {\n"
                    "  bogus.instruction;\n}\n",
                    "bad.ptx") == CUDA_ERROR_INVALID_PTX);
  CHECK(link.log().find("bad.ptx") != std::string::npos);
  CHECK(link.log_filled() == link.log().size());
  // A newer target than the device's is refused as ptxas refuses it.
  Link newer;
  CHECK(newer.AddPtx(".version 8.0\n.target sm_100\n.address_size 64\n") == CUDA_ERROR_INVALID_PTX);
  CHECK(newer.log().find("sm_100") != std::string::npos);
}

TEST_CASE("a damaged machine-code image is refused at the load") {
  Link link;
  EMU_OK(link.AddPtx(ReadKernelFile("basic.ptx")));
  const std::string image = link.Complete();
  REQUIRE(LoadResult(image) == CUDA_SUCCESS);
  std::string damaged = image;
  SECTION("a byte of its code") { damaged[image.size() / 2] ^= 0x20; }
  SECTION("its magic") { damaged[1] = 'X'; }
  SECTION("cut short") { damaged[image.size() - 10] = '\0'; }
  SECTION("its header") { damaged[12] = 1; }  // the reserved field
  CHECK(LoadResult(damaged) == CUDA_ERROR_INVALID_IMAGE);
}

TEST_CASE("machine code for another GPU is no binary for this one") {
  Link link;
  EMU_OK(link.AddPtx(ReadKernelFile("basic.ptx")));
  std::string image = link.Complete();
  const uint32_t other_arch = 75;
  std::memcpy(image.data() + 8, &other_arch, sizeof(other_arch));
  CHECK(LoadResult(image) == CUDA_ERROR_NO_BINARY_FOR_GPU);
}

TEST_CASE("two PTX units link into one module: a kernel calls a function of the other unit") {
  const std::string header = ".version 7.0\n.target sm_80\n.address_size 64\n";
  const std::string callee = header +
                             ".visible .func (.param .b32 ret) twice(.param .b32 x)\n{\n"
                             "  .reg .b32 %r<3>;\n  ld.param.b32 %r1, [x];\n"
                             "  add.s32 %r2, %r1, %r1;\n  st.param.b32 [ret], %r2;\n  ret;\n}\n";
  const std::string caller = header +
                             ".extern .func (.param .b32 ret) twice(.param .b32 x);\n"
                             ".visible .entry store_twice(.param .u64 out, .param .u32 v)\n{\n"
                             "  .reg .b32 %r<3>;\n  .reg .b64 %rd<3>;\n"
                             "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
                             "  ld.param.u32 %r1, [v];\n  {\n  .param .b32 p0;\n"
                             "  .param .b32 r0;\n  st.param.b32 [p0], %r1;\n"
                             "  call.uni (r0), twice, (p0);\n  ld.param.b32 %r2, [r0];\n  }\n"
                             "  st.global.u32 [%rd2], %r2;\n  ret;\n}\n";
  Link link;
  EMU_OK(link.AddPtx(caller, "caller.ptx"));
  EMU_OK(link.AddPtx(callee, "callee.ptx"));
  const std::string image = link.Complete();
  CUmodule module = nullptr;
  EMU_OK(Emu().cuModuleLoadData(&module, image.data()));
  CUfunction store_twice = nullptr;
  EMU_OK(Emu().cuModuleGetFunction(&store_twice, module, "store_twice"));
  CUdeviceptr out = Zeros<unsigned>(1);
  unsigned value = 21;
  EMU_OK(LaunchAndWait(store_twice, 1, 1, {&out, &value}));
  CHECK(Download<unsigned>(out, 1)[0] == 42);
  EMU_OK(Emu().cuMemFree_v2(out));
  EMU_OK(Emu().cuModuleUnload(module));
}

TEST_CASE("files, input kinds and handles the linker refuses") {
  Link link;
  CHECK(Emu().cuLinkAddFile_v2(link.state(), CU_JIT_INPUT_PTX, "/nonexistent/k.ptx", 0, nullptr,
                               nullptr) == CUDA_ERROR_FILE_NOT_FOUND);
  char cubin[16] = {};
  CHECK(Emu().cuLinkAddData_v2(link.state(), CU_JIT_INPUT_CUBIN, cubin, sizeof(cubin), "x.cubin", 0,
                               nullptr, nullptr) == CUDA_ERROR_NOT_SUPPORTED);
  CHECK(link.log().find("PTX only") != std::string::npos);
  void* image = nullptr;
  CHECK(Emu().cuLinkComplete(link.state(), &image, nullptr) == CUDA_ERROR_INVALID_VALUE);
  const std::string path = std::string(TALLY_EMU_KERNEL_DIR) + "/basic.ptx";
  EMU_OK(Emu().cuLinkAddFile_v2(link.state(), CU_JIT_INPUT_PTX, path.c_str(), 0, nullptr, nullptr));
  CheckVecAdd(link.Complete().data());
  CUlinkState gone = nullptr;
  EMU_OK(Emu().cuLinkCreate_v2(0, nullptr, nullptr, &gone));
  EMU_OK(Emu().cuLinkDestroy(gone));
  CHECK(Emu().cuLinkDestroy(gone) == CUDA_ERROR_INVALID_HANDLE);
  CHECK(Emu().cuLinkComplete(gone, &image, nullptr) == CUDA_ERROR_INVALID_HANDLE);
}

}  // namespace
}  // namespace tally::emu::testing
