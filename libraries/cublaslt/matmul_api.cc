// cuBLASLt's entry points that the stand-in implements: handles (a cuBLAS handle of the stand-in
// is one too), the three descriptor kinds, the heuristic (one algorithm: Tally's GEMM kernel,
// needing no workspace) and cublasLtMatmul, which checks its descriptors as the cuBLASLt
// documentation says and launches Tally's GEMM with the epilogue on the given stream.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <library_types.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "client/vendor_calls.h"
#include "libraries/blas/calls.h"
#include "libraries/blas/gemm_types.h"
#include "libraries/cublaslt/blas_handles.h"
#include "libraries/cublaslt/descriptors.h"

namespace tally::libraries::cublaslt {
namespace {

// The epilogues Tally's kernel applies: bias, then ReLU or GELU.
std::optional<kernels::Activation> ActivationOf(uint32_t epilogue, bool& bias) {
  bias = false;
  switch (epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      return kernels::Activation::kNone;
    case CUBLASLT_EPILOGUE_RELU:
      return kernels::Activation::kRelu;
    case CUBLASLT_EPILOGUE_GELU:
      return kernels::Activation::kGelu;
    case CUBLASLT_EPILOGUE_BIAS:
      bias = true;
      return kernels::Activation::kNone;
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      bias = true;
      return kernels::Activation::kRelu;
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      bias = true;
      return kernels::Activation::kGelu;
    default:
      return std::nullopt;  // auxiliary outputs, gradients
  }
}

// A layout's batch as the kernels take it: entries batch_stride elements apart.
kernels::MatrixOperand Operand(const void* data, const LayoutState& layout, bool transposed) {
  return {data, nullptr, layout.ld, layout.batch_stride, transposed};
}

// cublasLtMatmul's arguments, its descriptors found.
struct MatmulArgs {
  const MatmulState& op;
  const void* alpha;
  const void* a;
  const LayoutState& la;
  const void* b;
  const LayoutState& lb;
  const void* beta;
  const void* c;
  const LayoutState& lc;
  void* d;
  const LayoutState& ld;
  void* workspace;
  size_t workspace_bytes;
  cudaStream_t stream;
};

// The checked call (m x n x k), posted to the vendor library inside the server where it runs
// this client's cuBLASLt calls; nullopt where it runs in Tally's kernels (not so for this
// client, or a capture under way).
std::optional<cublasStatus_t> PostToVendor(const MatmulArgs& x, uint64_t m, uint64_t n,
                                           uint64_t k) {
  if (!ipc::Contains(tally_vendor_libraries(), ipc::Library::kCublasLt)) return std::nullopt;
  const MatmulState& op = x.op;
  ipc::VendorLtMatmul call{};
  call.op_a = op.transa;
  call.op_b = op.transb;
  call.m = static_cast<int64_t>(m);
  call.n = static_cast<int64_t>(n);
  call.k = static_cast<int64_t>(k);
  call.type_a = x.la.type;
  call.type_b = x.lb.type;
  call.type_c = x.lc.type;
  call.type_d = x.ld.type;
  call.compute = op.compute_type;
  call.scale_type = op.scale_type;
  call.epilogue = op.epilogue;
  call.bias_type = op.bias_type == -1 ? x.ld.type : static_cast<uint32_t>(op.bias_type);
  call.lda = x.la.ld;
  call.ldb = x.lb.ld;
  call.ldc = x.lc.ld;
  call.ldd = x.ld.ld;
  call.batch_a = x.la.batch_count;
  call.batch_b = x.lb.batch_count;
  call.batch = x.ld.batch_count;
  call.stride_a = x.la.batch_stride;
  call.stride_b = x.lb.batch_stride;
  call.stride_c = x.lc.batch_stride;
  call.stride_d = x.ld.batch_stride;
  call.stride_bias = op.bias_batch_stride;
  call.a = reinterpret_cast<uintptr_t>(x.a);
  call.b = reinterpret_cast<uintptr_t>(x.b);
  call.c = reinterpret_cast<uintptr_t>(x.c);
  call.d = reinterpret_cast<uintptr_t>(x.d);
  bool bias = false;
  ActivationOf(op.epilogue, bias);
  call.bias = bias ? reinterpret_cast<uintptr_t>(op.bias) : 0;
  call.scalars_on_device = op.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE ? 1 : 0;
  call.workspace = reinterpret_cast<uintptr_t>(x.workspace);
  call.workspace_bytes = x.workspace_bytes;
  const auto scale = static_cast<cudaDataType>(op.scale_type);
  const size_t scalar_bytes = scale == CUDA_R_64F ? 8 : scale == CUDA_R_32F ? 4 : 2;
  PutScalar(call.scalars_on_device == 1, x.alpha, scalar_bytes, call.alpha);
  PutScalar(call.scalars_on_device == 1, x.beta, scalar_bytes, call.beta);
  const cudaError_t posted = tally_vendor_lt_matmul(&call, x.stream);
  if (posted == cudaErrorNotSupported) return std::nullopt;
  return FromLaunch(posted);
}

// D = act(alpha op(A) op(B) + beta C + bias): the checks of the cuBLASLt documentation
// (cublasLtMatmul: "CUBLAS_STATUS_INVALID_VALUE if the parameters are in conflict or in an
// impossible configuration"), then the launch.
cublasStatus_t Matmul(const MatmulArgs& x) {
  const MatmulState& op = x.op;
  const LayoutState &la = x.la, &lb = x.lb, &lc = x.lc, &ld = x.ld;
  const void *alpha = x.alpha, *beta = x.beta;
  const std::optional<bool> ta = Transposed(static_cast<cublasOperation_t>(op.transa));
  const std::optional<bool> tb = Transposed(static_cast<cublasOperation_t>(op.transb));
  if (!ta || !tb || alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  for (const LayoutState* layout : {&la, &lb, &lc, &ld}) {
    if (layout->order != CUBLASLT_ORDER_COL || layout->plane_offset != 0) {
      return NotSupported("cublasLtMatmul", "a layout other than column-major");
    }
    if (layout->ld < static_cast<int64_t>(std::max<uint64_t>(1, layout->rows)) ||
        layout->batch_count < 1) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  }
  if (op.transc != CUBLAS_OP_N) return NotSupported("cublasLtMatmul", "a transposed C");
  // op(A) is m x k, op(B) k x n, C and D m x n.
  const uint64_t m = ld.rows, n = ld.cols;
  const uint64_t k = *ta ? la.rows : la.cols;
  if ((*ta ? la.cols : la.rows) != m || (*tb ? lb.rows : lb.cols) != n ||
      (*tb ? lb.cols : lb.rows) != k || lc.rows != m || lc.cols != n || la.type != lb.type ||
      lc.type != ld.type || lc.batch_count != ld.batch_count ||
      (la.batch_count != 1 && la.batch_count != ld.batch_count) ||
      (lb.batch_count != 1 && lb.batch_count != ld.batch_count)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const char* why = "";
  const std::optional<GemmTypes> types = ExTypes(
      static_cast<cudaDataType>(la.type), static_cast<cudaDataType>(lb.type),
      static_cast<cudaDataType>(ld.type), static_cast<cublasComputeType_t>(op.compute_type), why);
  if (!types) return NotSupported("cublasLtMatmul", why);
  const std::optional<kernels::ElementType> scale =
      ElementOf(static_cast<cudaDataType>(op.scale_type));
  if (!scale || *scale != types->scalar) {
    return NotSupported("cublasLtMatmul", "this scale type for the compute type");
  }
  bool bias = false;
  const std::optional<kernels::Activation> activation = ActivationOf(op.epilogue, bias);
  if (!activation) return NotSupported("cublasLtMatmul", "this epilogue");
  if (bias && (op.bias == nullptr)) return CUBLAS_STATUS_INVALID_VALUE;
  if (bias && op.bias_type != -1 && static_cast<uint32_t>(op.bias_type) != ld.type) {
    return NotSupported("cublasLtMatmul", "a bias of another type than D's");
  }
  if (op.pointer_mode != CUBLASLT_POINTER_MODE_HOST &&
      op.pointer_mode != CUBLASLT_POINTER_MODE_DEVICE) {
    return NotSupported("cublasLtMatmul", "vector scalars");
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (std::optional<cublasStatus_t> posted = PostToVendor(x, m, n, k)) return *posted;
  const bool on_device = op.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE;
  kernels::GemmProblem problem;
  problem.m = static_cast<int64_t>(m);
  problem.n = static_cast<int64_t>(n);
  problem.k = static_cast<int64_t>(k);
  problem.batch = ld.batch_count;
  problem.ab = types->ab;
  problem.c = types->c;
  // A batch of one entry is the same for every entry of D's (stride 0).
  problem.a = Operand(x.a, la, *ta);
  if (la.batch_count == 1) problem.a.stride = 0;
  problem.b = Operand(x.b, lb, *tb);
  if (lb.batch_count == 1) problem.b.stride = 0;
  problem.c_in = Operand(x.c, lc, false);
  problem.d_data = x.d;
  problem.ldd = ld.ld;
  problem.stride_d = ld.batch_stride;
  problem.alpha = ReadScalar(on_device, alpha, types->scalar);
  problem.beta = ReadScalar(on_device, beta, types->scalar);
  problem.bias = bias ? op.bias : nullptr;
  problem.bias_stride = op.bias_batch_stride;
  problem.activation = *activation;
  return FromLaunch(kernels::LaunchGemm(problem, x.stream));
}

bool LiveHandle(cublasLtHandle_t handle) { return tally_blas_handle_find(handle) != nullptr; }

}  // namespace
}  // namespace tally::libraries::cublaslt

using tally::libraries::BlasCall;
// The library every entry point below belongs to (libraries/blas/calls.h, BlasCall).
constexpr tally::ipc::Library kCublasLt = tally::ipc::Library::kCublasLt;
namespace lt = tally::libraries::cublaslt;

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  return BlasCall<kCublasLt>(
      [&] { return tally_blas_handle_create(reinterpret_cast<void**>(handle)); });
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return BlasCall<kCublasLt>([&] { return tally_blas_handle_destroy(handle); });
}

// cuBLASLt ships with cuBLAS and has its version.
size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  return BlasCall<kCublasLt>([&] { return tally::libraries::LibraryProperty(type, value); });
}

const char* cublasLtGetStatusName(cublasStatus_t status) {
  return tally::libraries::StatusName(status);
}

const char* cublasLtGetStatusString(cublasStatus_t status) {
  return tally::libraries::StatusDescription(status);
}

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout, size_t size,
                                                 cudaDataType type, uint64_t rows, uint64_t cols,
                                                 int64_t ld) {
  return BlasCall<kCublasLt>([&] { return lt::InitLayout(layout, size, type, rows, cols, ld); });
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  return BlasCall<kCublasLt>([&] {
    if (layout == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    auto* storage = new cublasLtMatrixLayoutOpaque_t;
    lt::InitLayout(storage, sizeof(*storage), type, rows, cols, ld);
    *layout = storage;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  return BlasCall<kCublasLt>([&] {
    if (lt::FindLayout(layout) == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    lt::Forget(layout);
    delete layout;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attribute,
                                                const void* buffer, size_t size) {
  return BlasCall<kCublasLt>(
      [&] { return lt::SetLayoutAttribute(layout, attribute, buffer, size); });
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attribute,
                                                void* buffer, size_t size, size_t* written) {
  return BlasCall<kCublasLt>(
      [&] { return lt::GetLayoutAttribute(layout, attribute, buffer, size, written); });
}

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size,
                                               cublasComputeType_t compute, cudaDataType scale) {
  return BlasCall<kCublasLt>([&] { return lt::InitMatmul(desc, size, compute, scale); });
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  return BlasCall<kCublasLt>([&] {
    if (desc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    auto* storage = new cublasLtMatmulDescOpaque_t;
    lt::InitMatmul(storage, sizeof(*storage), compute, scale);
    *desc = storage;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  return BlasCall<kCublasLt>([&] {
    if (lt::FindMatmul(desc) == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    lt::Forget(desc);
    delete desc;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute,
                                              const void* buffer, size_t size) {
  return BlasCall<kCublasLt>([&] { return lt::SetMatmulAttribute(desc, attribute, buffer, size); });
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attribute,
                                              void* buffer, size_t size, size_t* written) {
  return BlasCall<kCublasLt>(
      [&] { return lt::GetMatmulAttribute(desc, attribute, buffer, size, written); });
}

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t preference,
                                                     size_t size) {
  return BlasCall<kCublasLt>([&] { return lt::InitPreference(preference, size); });
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* preference) {
  return BlasCall<kCublasLt>([&] {
    if (preference == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    auto* storage = new cublasLtMatmulPreferenceOpaque_t;
    lt::InitPreference(storage, sizeof(*storage));
    *preference = storage;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t preference) {
  return BlasCall<kCublasLt>([&] {
    if (lt::FindPreference(preference) == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    lt::Forget(preference);
    delete preference;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attribute,
                                                    const void* buffer, size_t size) {
  return BlasCall<kCublasLt>(
      [&] { return lt::SetPreferenceAttribute(preference, attribute, buffer, size); });
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t preference,
                                                    cublasLtMatmulPreferenceAttributes_t attribute,
                                                    void* buffer, size_t size, size_t* written) {
  return BlasCall<kCublasLt>(
      [&] { return lt::GetPreferenceAttribute(preference, attribute, buffer, size, written); });
}

// One algorithm, Tally's GEMM kernel, which needs no workspace: offered for every problem the
// descriptors allow (cublasLtMatmul checks the rest when it runs).
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t preference, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned) {
  return BlasCall<kCublasLt>([&] {
    if (!lt::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (lt::FindMatmul(desc) == nullptr || lt::FindLayout(a) == nullptr ||
        lt::FindLayout(b) == nullptr || lt::FindLayout(c) == nullptr ||
        lt::FindLayout(d) == nullptr || lt::FindPreference(preference) == nullptr ||
        requested <= 0 || results == nullptr || returned == nullptr) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    std::memset(&results[0], 0, sizeof(results[0]));
    results[0].workspaceSize = 0;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
  });
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t a_layout, const void* B,
                              cublasLtMatrixLayout_t b_layout, const void* beta, const void* C,
                              cublasLtMatrixLayout_t c_layout, void* D,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t*,
                              void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  return BlasCall<kCublasLt>([&] {
    if (!lt::LiveHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    const lt::MatmulState* op = lt::FindMatmul(desc);
    const lt::LayoutState* la = lt::FindLayout(a_layout);
    const lt::LayoutState* lb = lt::FindLayout(b_layout);
    const lt::LayoutState* lc = lt::FindLayout(c_layout);
    const lt::LayoutState* ld = lt::FindLayout(d_layout);
    if (op == nullptr || la == nullptr || lb == nullptr || lc == nullptr || ld == nullptr) {
      return CUBLAS_STATUS_INVALID_VALUE;
    }
    return lt::Matmul(
        {*op, alpha, A, *la, B, *lb, beta, C, *lc, D, *ld, workspace, workspace_bytes, stream});
  });
}

}  // extern "C"
