// Machine code in the code cache, on the emulated GPU: PTX is linked once and stored, and a second
// loader (another server, or a restarted one) loads the machine code without linking; machine
// code the driver refuses is linked again and replaced; PTX the linker refuses, a driver without
// a linker, and no cache at all load the PTX as before, and PTX the linker refused is not linked
// again. With a filler, a miss loads the PTX and the machine code is linked and stored afterwards.
// The registry loads a module's original and a kernel's transformed forms so, and a second
// registry finds their machine code.
#include "server/machine_code.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "ipc/testing/eventually.h"
#include "ipc/testing/temp_dir.h"
#include "server/module_registry.h"

namespace tally::server {
namespace {
namespace fs = std::filesystem;

struct Device {
  Device()
      : backend(*Backend::Load(
            {.emulate = true, .device = 0, .emulator_library = TALLY_TEST_EMULATOR_LIBRARY})) {
    backend.MakeCurrent().IgnoreError();
  }
  const DriverApi& api() const { return backend.api(); }
  Backend backend;
};

Device& TheDevice() {
  static Device* device = new Device;
  return *device;
}

// A fresh cache folder, removed with the test.
struct TempCache {
  TempCache() { REQUIRE_FALSE(folder.path().empty()); }
  std::shared_ptr<CodeCache> Open() const {
    auto cache = CodeCache::Open(dir, 1 << 24);
    REQUIRE(cache.ok());
    return *std::move(cache);
  }
  ipc::testing::TempDir folder;
  fs::path dir{folder.path()};
};

constexpr char kDevice[] = "emulated sm_80";
constexpr int kDriver = 12040;

const std::string kStore42 = R"(.version 7.0
.target sm_80
.address_size 64
.visible .entry store42(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, 42;
  st.global.u32 [%rd2], %r1;
  ret;
}
)";

// Loads kStore42 with `loader`, runs it and unloads it: what it stored.
uint32_t LoadAndRun(const MachineCode& loader) {
  const DriverApi& api = TheDevice().api();
  CUmodule module = nullptr;
  const LoadOutcome loaded = loader.Load(&module, kStore42);
  REQUIRE(loaded.result == CUDA_SUCCESS);
  CUfunction function = nullptr;
  REQUIRE(api.cuModuleGetFunction(&function, module, "store42") == CUDA_SUCCESS);
  CUdeviceptr out = 0;
  REQUIRE(api.cuMemAlloc(&out, sizeof(uint32_t)) == CUDA_SUCCESS);
  void* params[] = {&out};
  REQUIRE(api.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) ==
          CUDA_SUCCESS);
  uint32_t value = 0;
  REQUIRE(api.cuMemcpyDtoHAsync(&value, out, sizeof(value), nullptr) == CUDA_SUCCESS);
  REQUIRE(api.cuCtxSynchronize() == CUDA_SUCCESS);
  api.cuMemFree(out);
  api.cuModuleUnload(module);
  return value;
}

TEST_CASE("PTX is linked once; a second loader on the folder loads its machine code") {
  TempCache folder;
  const MachineCode first(TheDevice().api(), folder.Open(), kDevice, kDriver);
  CHECK(LoadAndRun(first) == 42);
  CHECK(first.counters().linked == 1);
  CHECK(first.counters().found == 0);
  const auto cache = folder.Open();
  const MachineCode second(TheDevice().api(), cache, kDevice, kDriver);
  CHECK(LoadAndRun(second) == 42);
  CHECK(second.counters().found == 1);
  CHECK(second.counters().linked == 0);
  CHECK(cache->counters().hits == 1);
  CHECK(cache->Usage().entries == 1);
  // Another driver version is another entry.
  const MachineCode newer(TheDevice().api(), cache, kDevice, kDriver + 10);
  CHECK(LoadAndRun(newer) == 42);
  CHECK(newer.counters().linked == 1);
  CHECK(cache->Usage().entries == 2);
}

TEST_CASE("with a filler, a miss loads the PTX, and its machine code is stored afterwards") {
  TempCache folder;
  const auto cache = folder.Open();
  const auto filler =
      std::make_shared<FormsWorker>(1, 4, [] { TheDevice().backend.MakeCurrent().IgnoreError(); });
  const auto loader =
      std::make_shared<const MachineCode>(TheDevice().api(), cache, kDevice, kDriver, filler);
  CHECK(LoadAndRun(*loader) == 42);
  REQUIRE(ipc::testing::Eventually([&] { return loader->counters().linked == 1; }));
  CHECK(cache->Usage().entries == 1);
  CHECK(LoadAndRun(*loader) == 42);
  CHECK(loader->counters().found == 1);
  CHECK(loader->counters().linked == 1);
}

// A linker that refuses everything; the rest of the driver as it is.
CUresult RefusingLinkComplete(CUlinkState, void**, size_t*) { return CUDA_ERROR_INVALID_PTX; }

TEST_CASE("PTX the linker refused once loads as PTX from then on, not linked again") {
  TempCache folder;
  const auto cache = folder.Open();
  DriverApi refusing = TheDevice().api();
  refusing.cuLinkComplete = &RefusingLinkComplete;
  SECTION("linked at the load") {
    const MachineCode loader(refusing, cache, kDevice, kDriver);
    CHECK(LoadAndRun(loader) == 42);
    CHECK(LoadAndRun(loader) == 42);
    CHECK(loader.counters().link_failed == 1);
  }
  SECTION("linked on a filler") {
    const auto filler = std::make_shared<FormsWorker>(
        1, 4, [] { TheDevice().backend.MakeCurrent().IgnoreError(); });
    const auto loader =
        std::make_shared<const MachineCode>(refusing, cache, kDevice, kDriver, filler);
    CHECK(LoadAndRun(*loader) == 42);
    REQUIRE(ipc::testing::Eventually([&] { return loader->filling() == 0; }));
    CHECK(loader->counters().link_failed == 1);
    CHECK(LoadAndRun(*loader) == 42);
    CHECK(loader->filling() == 0);  // nothing queued
    CHECK(loader->counters().link_failed == 1);
  }
  CHECK(cache->Usage().entries == 0);
}

TEST_CASE("machine code the driver refuses is linked again and replaced") {
  TempCache folder;
  const auto cache = folder.Open();
  const MachineCode loader(TheDevice().api(), cache, kDevice, kDriver);
  CHECK(LoadAndRun(loader) == 42);
  const std::optional<std::string> image = cache->Find(loader.Key(kStore42));
  REQUIRE(image.has_value());
  // Whole on disk (the cache's checksum holds) but damaged inside: the emulated GPU's own check.
  std::string damaged = *image;
  damaged[damaged.size() / 2] ^= 0x01;
  cache->Store(loader.Key(kStore42), damaged);
  CHECK(LoadAndRun(loader) == 42);
  CHECK(loader.counters().refused == 1);
  CHECK(loader.counters().linked == 2);
  CHECK(cache->Find(loader.Key(kStore42)) == image);
}

TEST_CASE("PTX the linker refuses, a driver without a linker, no cache: PTX loads as before") {
  TempCache folder;
  const auto cache = folder.Open();
  SECTION("the linker refuses the PTX: the load's own error and log") {
    const MachineCode loader(TheDevice().api(), cache, kDevice, kDriver);
    CUmodule module = nullptr;
    const LoadOutcome loaded = loader.Load(&module, ".version 7.0\n.target sm_80\nbogus;\n");
    CHECK(loaded.result == CUDA_ERROR_INVALID_PTX);
    CHECK(loaded.log.find("bogus") != std::string::npos);
    CHECK(loader.counters().link_failed == 1);
  }
  SECTION("no cuLink* in the driver") {
    DriverApi without_linker = TheDevice().api();
    without_linker.cuLinkCreate = nullptr;
    const MachineCode loader(without_linker, cache, kDevice, kDriver);
    CHECK(LoadAndRun(loader) == 42);
    CHECK(loader.counters().linked == 0);
  }
  SECTION("no code cache") {
    const MachineCode loader(TheDevice().api(), nullptr, kDevice, kDriver);
    CHECK(LoadAndRun(loader) == 42);
    CHECK(loader.counters().linked == 0);
  }
  CHECK(cache->Usage().entries == 0);
}

std::shared_ptr<SharedModule> RegisterFormsKernel(ModuleRegistry& registry) {
  std::ifstream file(std::string(TALLY_TEST_FATBIN_DIR) + "/forms_kernel.fatbin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(!bytes.empty());
  auto module = registry.Register({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()});
  REQUIRE(module.ok());
  return *module;
}

TEST_CASE("a module's original is loaded as machine code, which a second registry finds") {
  TempCache folder;
  {
    ModuleRegistry first(TheDevice().backend, /*build_forms=*/false, /*fence=*/false,
                         folder.Open());
    RegisterFormsKernel(first);
    REQUIRE(ipc::testing::Eventually([&] { return first.machine_code().counters().linked == 1; }));
    CHECK(first.code_cache()->Usage().entries == 1);
  }
  ModuleRegistry second(TheDevice().backend, /*build_forms=*/false, /*fence=*/false, folder.Open());
  const std::shared_ptr<SharedModule> module = RegisterFormsKernel(second);
  CHECK(module->kernels().contains("RecordBlocks"));
  CHECK(second.machine_code().counters().found == 1);
  CHECK(second.machine_code().counters().linked == 0);
  CHECK(second.code_cache()->counters().misses == 0);
}

TEST_CASE("a kernel's forms are loaded as machine code, which a second registry finds") {
  TempCache folder;
  auto made = [&](ModuleRegistry& registry) {
    const std::shared_ptr<SharedModule> module = RegisterFormsKernel(registry);
    const Kernel& kernel = module->kernels().at("RecordBlocks");
    module->PrepareForms(kernel);
    CHECK(kernel.sliced.has_value());
    CHECK(kernel.preemptible.has_value());
  };
  {
    ModuleRegistry first(TheDevice().backend, /*build_forms=*/true, /*fence=*/false, folder.Open());
    made(first);
    // The original's machine code and the forms'.
    REQUIRE(ipc::testing::Eventually([&] { return first.machine_code().counters().linked == 2; }));
  }
  ModuleRegistry second(TheDevice().backend, /*build_forms=*/true, /*fence=*/false, folder.Open());
  made(second);
  CHECK(second.machine_code().counters().found == 2);
  CHECK(second.machine_code().counters().linked == 0);
  CHECK(second.code_cache()->counters().hits == 3);  // the forms and both machine codes
  CHECK(second.code_cache()->Usage().entries == 3);
}

}  // namespace
}  // namespace tally::server
