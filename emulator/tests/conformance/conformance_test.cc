// The emulator's conformance suite: every case's kernel, as compiled by nvcc and by NVRTC,
// runs on the emulator and must match its CPU reference (bit-exact for integer work, within
// the documented bound for floating point).
#include <map>
#include <set>

#include "emulator/tests/conformance/run.h"
#include "emulator/tests/kernel_util.h"

namespace tally::emu::conformance {
namespace {

TEST_CASE("conformance: every case matches its CPU reference, for each PTX producer") {
  emu::testing::EnsureContext();
  const std::vector<Case>& cases = AllCases();
  std::set<std::string> kernels;
  for (const Case& c : cases) {
    INFO(c.kernel);
    CHECK(kernels.insert(c.kernel).second);  // one case per kernel
  }
  size_t runs = 0;
  for (const char* const* producer = kProducers; *producer != nullptr; ++producer) {
    std::map<std::string, CUmodule> modules;
    for (const Case& c : cases) {
      INFO(*producer << " " << c.module << ".ptx: " << c.kernel << " (" << c.covers << ")");
      CUmodule& module = modules[c.module];
      if (module == nullptr) {
        std::string ptx = ReadModule(*producer, c.module);
        EMU_OK(emu::testing::Emu().cuModuleLoadData(&module, ptx.c_str()));
      }
      Outputs outputs = RunOriginal(module, c);
      std::string errors = Verify(c, outputs);
      INFO(errors);
      CHECK(errors.empty());
      ++runs;
    }
    for (auto& [name, module] : modules) EMU_OK(emu::testing::Emu().cuModuleUnload(module));
  }
  CHECK(runs == 2 * cases.size());
}

}  // namespace
}  // namespace tally::emu::conformance
