// Choosing and linking an image's PTX: a linked program's units are linked into one module, and
// a program whose units do not link is refused with an error naming what is missing.
#include "server/device_code.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ptx_transform/printer.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

constexpr uint32_t kArch = 75;

std::string ReadTestFatbin(const std::string& name) {
  std::ifstream file(std::string(TALLY_TEST_FATBIN_DIR) + "/" + name, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(!bytes.empty());
  return bytes;
}

// The fatbins back to back, 8-byte aligned, as the client sends a linked program.
std::vector<ptx::FatbinEntry> Entries(const std::vector<std::string>& names) {
  std::string image;
  for (const std::string& name : names) {
    image.resize((image.size() + 7) / 8 * 8, '\0');
    image += ReadTestFatbin(name);
  }
  auto entries = ptx::ReadFatbin({reinterpret_cast<const uint8_t*>(image.data()), image.size()});
  REQUIRE(entries.ok());
  return *std::move(entries);
}

TEST_CASE("a linked program's translation units become one module") {
  auto code = SelectDeviceCode(Entries({"rdc_caller.fatbin", "rdc_callee.fatbin"}), kArch);
  REQUIRE(code.ok());
  CHECK(code->ptx.find(".extern") == std::string::npos);
  CHECK(code->ptx.find("g_factor = 4") != std::string::npos);
  CHECK(code->ptx.find(".entry Apply") != std::string::npos);
  REQUIRE(code->module);
  CHECK(code->ptx == ptx::PrintModule(*code->module));
  CHECK(code->unresolved_functions.empty());
  // What a GPU's driver would compile: ptxas must accept it.
  const std::string path = "/tmp/tally_device_code_test_" + std::to_string(getpid()) + ".ptx";
  std::ofstream(path) << code->ptx;
  const int status =
      std::system((std::string(TALLY_TEST_PTXAS) + " -arch=sm_75 -o /dev/null " + path).c_str());
  std::remove(path.c_str());
  CHECK(status == 0);
}

TEST_CASE("a program whose units do not link is refused, naming the symbol") {
  auto code = SelectDeviceCode(Entries({"rdc_caller.fatbin", "scale_kernel.fatbin"}), kArch);
  REQUIRE_FALSE(code.ok());
  CHECK(ResultOf(code.status()) == CUDA_ERROR_NOT_FOUND);
  const std::string message(code.status().message());
  CHECK(message.find("g_factor") != std::string::npos);
  CHECK(message.find("-rdc=true") != std::string::npos);
}

TEST_CASE("one fatbin gives its PTX for the device unchanged") {
  const auto entries = Entries({"scale_kernel.fatbin"});
  auto code = SelectDeviceCode(entries, kArch);
  REQUIRE(code.ok());
  CHECK(code->ptx == ptx::SelectPtxForArch(entries, kArch)->payload);
  CHECK_FALSE(code->module);  // left to the registry, which may only index it
  auto too_old = SelectDeviceCode(entries, 50);
  REQUIRE_FALSE(too_old.ok());
  CHECK(ResultOf(too_old.status()) == CUDA_ERROR_NO_BINARY_FOR_GPU);
}

}  // namespace
}  // namespace tally::server
