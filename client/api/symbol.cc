// Device variables named by their host shadow (CUDA Runtime API, "Memory Management":
// cudaMemcpyToSymbol, cudaMemcpyFromSymbol, cudaGetSymbolAddress, cudaGetSymbolSize). The
// variable's module is loaded on first use, like a kernel's.
#include <cuda_runtime_api.h>

#include "client/copy.h"
#include "client/entry.h"
#include "client/handles.h"
#include "client/kernels.h"
#include "common/status.h"

using tally::client::CheckOut;
using tally::client::Copy;
using tally::client::CopyMode;
using tally::client::CudaError;
using tally::client::KernelRegistry;
using tally::client::RuntimeCall;
using tally::client::Variable;

namespace {

// The device address of bytes [offset, offset + count) of `symbol`.
absl::StatusOr<void*> SymbolRange(const void* symbol, size_t count, size_t offset) {
  TALLY_ASSIGN_OR_RETURN(Variable * variable, KernelRegistry::Get().ResolveVariable(symbol));
  if (offset > variable->size || count > variable->size - offset) {
    return CudaError(cudaErrorInvalidValue, "the copy exceeds the symbol");
  }
  return reinterpret_cast<void*>(variable->address + offset);
}

absl::Status ToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                      cudaMemcpyKind kind, cudaStream_t stream, CopyMode mode) {
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault) {
    return CudaError(cudaErrorInvalidMemcpyDirection, "copies to a symbol go to the device");
  }
  TALLY_ASSIGN_OR_RETURN(void* dst, SymbolRange(symbol, count, offset));
  return Copy(dst, src, count, kind, stream, mode);
}

absl::Status FromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                        cudaMemcpyKind kind, cudaStream_t stream, CopyMode mode) {
  if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice &&
      kind != cudaMemcpyDefault) {
    return CudaError(cudaErrorInvalidMemcpyDirection, "copies from a symbol come from the device");
  }
  TALLY_ASSIGN_OR_RETURN(void* src, SymbolRange(symbol, count, offset));
  return Copy(dst, src, count, kind, stream, mode);
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset,
                               cudaMemcpyKind kind) {
  return RuntimeCall(__func__, [&] {
    return ToSymbol(symbol, src, count, offset, kind, nullptr, CopyMode::kSync);
  });
}

cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                    size_t offset, cudaMemcpyKind kind, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] {
    return ToSymbol(symbol, src, count, offset, kind, stream, CopyMode::kAsync);
  });
}

cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                 cudaMemcpyKind kind) {
  return RuntimeCall(__func__, [&] {
    return FromSymbol(dst, symbol, count, offset, kind, nullptr, CopyMode::kSync);
  });
}

cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset,
                                      cudaMemcpyKind kind, cudaStream_t stream) {
  return RuntimeCall(__func__, [&] {
    return FromSymbol(dst, symbol, count, offset, kind, stream, CopyMode::kAsync);
  });
}

cudaError_t cudaGetSymbolAddress(void** address, const void* symbol) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(address));
    TALLY_ASSIGN_OR_RETURN(*address, SymbolRange(symbol, 0, 0));
    return absl::OkStatus();
  });
}

cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  return RuntimeCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(size));
    TALLY_ASSIGN_OR_RETURN(Variable * variable, KernelRegistry::Get().ResolveVariable(symbol));
    *size = variable->size;
    return absl::OkStatus();
  });
}

}  // extern "C"
