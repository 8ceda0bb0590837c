#include "client/managed_variables.h"

#include <cuda_runtime_api.h>

#include "absl/strings/str_format.h"
#include "client/copy.h"
#include "client/host_blocks.h"
#include "client/kernels.h"
#include "cuda_abi/managed_pointer.h"
#include "common/status.h"

namespace tally::client {
namespace {

absl::Status Place(uint64_t module, const ManagedVariable& variable) {
  TALLY_ASSIGN_OR_RETURN(const ipc::GetGlobalResponse initial, FetchGlobal(module, variable.name));
  TALLY_ASSIGN_OR_RETURN(const ipc::GetGlobalResponse pointer,
                         FetchGlobal(module, ManagedPointerName(variable.name)));
  if (initial.size < variable.size || pointer.size != sizeof(uint64_t)) {
    return absl::DataLossError(absl::StrFormat(
        "the server's module does not match the managed variable %s as registered",
        variable.name));
  }
  TALLY_ASSIGN_OR_RETURN(
      void* memory,
      HostBlocks::Get().Allocate(variable.size, HostBlockKind::kManaged, cudaMemAttachGlobal));
  // Managed memory is mapped at its own address (unified addressing): that is the device's too.
  const uint64_t address = reinterpret_cast<uintptr_t>(memory);
  absl::Status placed = ReadDevice(memory, initial.device_ptr, variable.size);
  if (placed.ok()) placed = WriteDevice(pointer.device_ptr, &address, sizeof address);
  if (!placed.ok()) {
    HostBlocks::Get().Free(memory, HostBlockKind::kManaged).IgnoreError();
    return placed;
  }
  *variable.host_pointer = memory;
  return absl::OkStatus();
}

}  // namespace

absl::Status PlaceManagedVariables(uint64_t module, const std::vector<ManagedVariable>& variables) {
  std::vector<const ManagedVariable*> placed;
  for (const ManagedVariable& variable : variables) {
    if (variable.size == 0 || variable.host_pointer == nullptr) continue;
    absl::Status status = Place(module, variable);
    if (!status.ok()) {
      // All or none: the module's kernels will not run, so what was placed goes back.
      for (const ManagedVariable* done : placed) {
        HostBlocks::Get().Free(*done->host_pointer, HostBlockKind::kManaged).IgnoreError();
        *done->host_pointer = nullptr;
      }
      return absl::Status(status.code(), absl::StrFormat("managed variable %s: %s", variable.name,
                                                         status.message()));
    }
    placed.push_back(&variable);
  }
  return absl::OkStatus();
}

void ForgetManagedVariables(const std::vector<ManagedVariable>& variables) {
  for (const ManagedVariable& variable : variables) {
    if (variable.host_pointer != nullptr) *variable.host_pointer = nullptr;
  }
}

}  // namespace tally::client
