// libFuzzer target for the fatbin, host-ELF and cubin readers: arbitrary bytes must give
// entries or an error, never an out-of-bounds access, a crash or a hang.
#include <cstdint>
#include <span>

#include "ptx_transform/cubin_info.h"
#include "ptx_transform/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tally::ptx;
  std::span<const uint8_t> bytes(data, size);
  auto entries = ReadFatbinFile(bytes);
  if (entries.ok()) {
    for (const auto& entry : *entries) {
      if (entry.kind != FatbinEntryKind::kCubin) continue;
      auto payload = std::span<const uint8_t>(
          reinterpret_cast<const uint8_t*>(entry.payload.data()), entry.payload.size());
      (void)ReadCubinKernelInfo(payload).ok();
    }
  }
  (void)ReadFatbin(bytes).ok();
  (void)ReadCubinKernelInfo(bytes).ok();
  return 0;
}
