// NVIDIA's cuBLAS inside the server (ARCHITECTURE.md, "Libraries"): loaded with dlopen (it links
// CUDA's runtime statically, which finds the driver the server uses), it runs the GEMMs of the
// clients whose calls the server's --library-kernels rule gives it, on the client's stream and
// with the client's memory, each as one unit of the client's queue. On the emulated GPU it is
// loaded only from a folder given explicitly (the tests' stand-in of the vendor library).
#pragma once

#include <cuda.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ipc/vendor_calls.h"

namespace tally::server {

class VendorBlas {
 public:
  // libcublas.so.13 and libcublasLt.so.13 from `folder` (empty: the dynamic loader's search
  // path), with every entry point the server calls; NotFound saying why not.
  static absl::StatusOr<std::unique_ptr<VendorBlas>> Load(const std::string& folder);
  VendorBlas(const VendorBlas&) = delete;
  VendorBlas& operator=(const VendorBlas&) = delete;
  // Destroys the handle (the device's context must still be there) and unloads the library.
  ~VendorBlas();

  // The file that was loaded.
  const std::string& path() const { return path_; }

  // Runs `call` on `stream` (a checked call: server/libraries/gemm_check.h). The dispatch
  // thread only, the device's context current on it; its handle is made at the first call.
  CUresult Gemm(CUstream stream, const ipc::VendorGemm& call);
  // The same for a cuBLASLt matmul: descriptors made for the call, the library's first
  // heuristic choice within the client's workspace.
  CUresult LtMatmul(CUstream stream, const ipc::VendorLtMatmul& call);

 private:
  struct Entries;
  VendorBlas(void* blas, void* lt, std::string path, std::unique_ptr<Entries> entries);

  void* const blas_;
  void* const lt_;
  const std::string path_;
  const std::unique_ptr<Entries> entries_;
  void* handle_ = nullptr;     // cublasHandle_t
  void* lt_handle_ = nullptr;  // cublasLtHandle_t
};

}  // namespace tally::server
