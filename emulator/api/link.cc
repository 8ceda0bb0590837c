// Exports the JIT linker: cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete,
// cuLinkDestroy (internal/link_state.h). PTX is the one input kind: the emulator has no machine
// code of NVIDIA's to link.
#include <cuda.h>

#include <fstream>
#include <iterator>
#include <string>

#include "emulator/internal/entry.h"
#include "emulator/internal/link_state.h"

using tally::emu::CheckOut;
using tally::emu::CudaError;
using tally::emu::Driver;
using tally::emu::JitErrorLog;
using tally::emu::LinkState;
using tally::emu::Run;

namespace tally::emu {
namespace {

// Adds `bytes` of input `type` to `state` ("PTX must be NULL-terminated": the text ends at the
// first NUL, or at `bytes`' end).
absl::Status AddInput(Driver& driver, CUlinkState state, CUjitInputType type,
                      std::string_view bytes, const char* name) {
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<LinkState> link, driver.links().Lookup(state));
  if (type != CU_JIT_INPUT_PTX) {
    return link->Refuse(CUDA_ERROR_NOT_SUPPORTED,
                        "the emulated GPU links PTX only (CUjitInputType " +
                            std::to_string(static_cast<int>(type)) + ")");
  }
  if (bytes.empty()) return link->Refuse(CUDA_ERROR_INVALID_VALUE, "no input data");
  return link->AddPtx(bytes.substr(0, bytes.find('\0')), name != nullptr ? name : "<input>");
}

}  // namespace
}  // namespace tally::emu

extern "C" {

CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues,
                         CUlinkState* stateOut) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(stateOut));
    if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
      return CudaError(CUDA_ERROR_INVALID_VALUE, "options without values");
    }
    TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());  // INVALID_CONTEXT without one
    const uint32_t arch = driver.config().cc_major * 10 + driver.config().cc_minor;
    *stateOut = driver.links().Insert(
        std::make_shared<LinkState>(JitErrorLog(numOptions, options, optionValues), arch));
    return absl::OkStatus();
  });
}

// The per-input options are compiler options, which the emulator has no use for.
CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size,
                          const char* name, unsigned int, CUjit_option*, void**) {
  return Run([&](Driver& driver) -> absl::Status {
    if (data == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null data");
    return tally::emu::AddInput(driver, state, type,
                                std::string_view(static_cast<const char*>(data), size), name);
  });
}

// "Equivalent to invoking cuLinkAddData on the contents of the file."
CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path, unsigned int,
                          CUjit_option*, void**) {
  return Run([&](Driver& driver) -> absl::Status {
    if (path == nullptr) return CudaError(CUDA_ERROR_INVALID_VALUE, "null path");
    std::ifstream file(path, std::ios::binary);
    if (!file) return CudaError(CUDA_ERROR_FILE_NOT_FOUND, std::string("cannot open ") + path);
    const std::string bytes((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    return tally::emu::AddInput(driver, state, type, bytes, path);
  });
}

CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  return Run([&](Driver& driver) -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(cubinOut));
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<LinkState> link, driver.links().Lookup(state));
    TALLY_RETURN_IF_ERROR(driver.CurrentContext().status());  // INVALID_CONTEXT without one
    TALLY_ASSIGN_OR_RETURN(std::string_view image, link->Complete());
    // The image stays in the link state, which the caller destroys after loading it.
    *cubinOut = const_cast<char*>(image.data());
    if (sizeOut != nullptr) *sizeOut = image.size();
    return absl::OkStatus();
  });
}

CUresult cuLinkDestroy(CUlinkState state) {
  return Run([&](Driver& driver) { return driver.links().Remove(state).status(); });
}

}  // extern "C"
