// cuBLASLt's descriptors in their opaque storage, and their attribute tables.
#include "libraries/cublaslt/descriptors.h"

#include <cstring>

#include "libraries/blas/calls.h"

namespace tally::libraries::cublaslt {
namespace {

// One cookie per kind, in the first word of the storage.
constexpr uint64_t kLayoutCookie = 0x7461'6c6c'794c'6179;      // "tallyLay"
constexpr uint64_t kMatmulCookie = 0x7461'6c6c'794d'6d75;      // "tallyMmu"
constexpr uint64_t kPreferenceCookie = 0x7461'6c6c'7950'7266;  // "tallyPrf"

template <typename State>
State* Find(void* storage, uint64_t cookie) {
  if (storage == nullptr) return nullptr;
  auto* state = static_cast<State*>(storage);
  return state->cookie == cookie ? state : nullptr;
}

// An attribute: its number, the size cublasLt.h documents, and where it lives in State; null
// for one the stand-in accepts nowhere (NOT_SUPPORTED).
template <typename State>
struct Attribute {
  int id;
  size_t size;
  size_t offset;  // into State; kUnsupported for none
  const char* name;
};
constexpr size_t kUnsupported = ~size_t{0};

#define TALLY_FIELD(State, id, field) \
  Attribute<State> { id, sizeof(State::field), offsetof(State, field), #id }
#define TALLY_UNSUPPORTED(State, id, size) \
  Attribute<State> { id, size, kUnsupported, #id }

constexpr Attribute<LayoutState> kLayoutAttributes[] = {
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_TYPE, type),
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_ORDER, order),
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_ROWS, rows),
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_COLS, cols),
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_LD, ld),
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch_count),
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, batch_stride),
    TALLY_FIELD(LayoutState, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, plane_offset),
    TALLY_UNSUPPORTED(LayoutState, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, sizeof(uint32_t)),
};

constexpr Attribute<MatmulState> kMatmulAttributes[] = {
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, compute_type),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_SCALE_TYPE, scale_type),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_POINTER_MODE, pointer_mode),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_TRANSA, transa),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_TRANSB, transb),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_TRANSC, transc),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_FILL_MODE, fill_mode),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_batch_stride),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, sm_count_target),
    TALLY_FIELD(MatmulState, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accumulation),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, sizeof(int64_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, sizeof(int64_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, sizeof(int64_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, sizeof(int32_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, sizeof(int32_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, sizeof(int32_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_C_SCALE_MODE, sizeof(int32_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_D_SCALE_MODE, sizeof(int32_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, sizeof(int32_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, sizeof(void*)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, sizeof(int32_t)),
    TALLY_UNSUPPORTED(MatmulState, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, sizeof(void*)),
};

constexpr Attribute<PreferenceState> kPreferenceAttributes[] = {
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_SEARCH_MODE, search_mode),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace_bytes),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reduction_scheme_mask),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, min_alignment[0]),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, min_alignment[1]),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, min_alignment[2]),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, min_alignment[3]),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, max_waves),
    TALLY_FIELD(PreferenceState, CUBLASLT_MATMUL_PREF_IMPL_MASK, implementation_mask),
};

#undef TALLY_FIELD
#undef TALLY_UNSUPPORTED

template <typename State, size_t N>
const Attribute<State>* Lookup(const Attribute<State> (&table)[N], int id) {
  for (const Attribute<State>& attribute : table) {
    if (attribute.id == id) return &attribute;
  }
  return nullptr;
}

template <typename State, size_t N>
cublasStatus_t Set(State* state, const Attribute<State> (&table)[N], int id, const void* buffer,
                   size_t size) {
  const Attribute<State>* attribute = Lookup(table, id);
  if (state == nullptr || attribute == nullptr || buffer == nullptr || size != attribute->size) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (attribute->offset == kUnsupported)
    return NotSupported(attribute->name, "this cuBLASLt attribute");
  std::memcpy(reinterpret_cast<char*>(state) + attribute->offset, buffer, size);
  return CUBLAS_STATUS_SUCCESS;
}

// cublasLt*GetAttribute: with size 0 only the size is told (in *written); else the buffer must
// hold the attribute.
template <typename State, size_t N>
cublasStatus_t Get(const State* state, const Attribute<State> (&table)[N], int id, void* buffer,
                   size_t size, size_t* written) {
  const Attribute<State>* attribute = Lookup(table, id);
  if (state == nullptr || attribute == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0 && written != nullptr) {
    *written = attribute->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buffer == nullptr || size < attribute->size) return CUBLAS_STATUS_INVALID_VALUE;
  if (attribute->offset == kUnsupported)
    return NotSupported(attribute->name, "this cuBLASLt attribute");
  std::memcpy(buffer, reinterpret_cast<const char*>(state) + attribute->offset, attribute->size);
  if (written != nullptr) *written = attribute->size;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

const LayoutState* FindLayout(cublasLtMatrixLayout_t layout) {
  return Find<LayoutState>(layout, kLayoutCookie);
}
const MatmulState* FindMatmul(cublasLtMatmulDesc_t desc) {
  return Find<MatmulState>(desc, kMatmulCookie);
}
const PreferenceState* FindPreference(cublasLtMatmulPreference_t preference) {
  return Find<PreferenceState>(preference, kPreferenceCookie);
}

cublasStatus_t InitLayout(void* storage, size_t size, cudaDataType type, uint64_t rows,
                          uint64_t cols, int64_t ld) {
  if (storage == nullptr || size < sizeof(cublasLtMatrixLayoutOpaque_t)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::memset(storage, 0, sizeof(cublasLtMatrixLayoutOpaque_t));
  *static_cast<LayoutState*>(storage) = {.cookie = kLayoutCookie,
                                         .type = static_cast<uint32_t>(type),
                                         .order = CUBLASLT_ORDER_COL,
                                         .rows = rows,
                                         .cols = cols,
                                         .ld = ld,
                                         .batch_count = 1,
                                         .batch_stride = 0,
                                         .plane_offset = 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t InitMatmul(void* storage, size_t size, cublasComputeType_t compute,
                          cudaDataType scale) {
  if (storage == nullptr || size < sizeof(cublasLtMatmulDescOpaque_t)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::memset(storage, 0, sizeof(cublasLtMatmulDescOpaque_t));
  *static_cast<MatmulState*>(storage) = {.cookie = kMatmulCookie,
                                         .compute_type = compute,
                                         .scale_type = scale,
                                         .pointer_mode = CUBLASLT_POINTER_MODE_HOST,
                                         .transa = CUBLAS_OP_N,
                                         .transb = CUBLAS_OP_N,
                                         .transc = CUBLAS_OP_N,
                                         .fill_mode = CUBLAS_FILL_MODE_FULL,
                                         .epilogue = CUBLASLT_EPILOGUE_DEFAULT,
                                         .bias = nullptr,
                                         .bias_batch_stride = 0,
                                         .bias_type = -1,
                                         .sm_count_target = 0,
                                         .fast_accumulation = 0};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t InitPreference(void* storage, size_t size) {
  if (storage == nullptr || size < sizeof(cublasLtMatmulPreferenceOpaque_t)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  std::memset(storage, 0, sizeof(cublasLtMatmulPreferenceOpaque_t));
  *static_cast<PreferenceState*>(storage) = {
      .cookie = kPreferenceCookie,
      .search_mode = CUBLASLT_SEARCH_BEST_FIT,
      .max_workspace_bytes = 0,
      .reduction_scheme_mask = CUBLASLT_REDUCTION_SCHEME_MASK,
      .min_alignment = {256, 256, 256, 256},
      .max_waves = 0,
      .implementation_mask = ~uint64_t{0}};
  return CUBLAS_STATUS_SUCCESS;
}

// Every state begins with its cookie.
void Forget(void* storage) { std::memset(storage, 0, sizeof(uint64_t)); }

cublasStatus_t SetLayoutAttribute(cublasLtMatrixLayout_t layout, int attribute, const void* buffer,
                                  size_t size) {
  return Set(Find<LayoutState>(layout, kLayoutCookie), kLayoutAttributes, attribute, buffer, size);
}
cublasStatus_t GetLayoutAttribute(cublasLtMatrixLayout_t layout, int attribute, void* buffer,
                                  size_t size, size_t* written) {
  return Get(FindLayout(layout), kLayoutAttributes, attribute, buffer, size, written);
}
cublasStatus_t SetMatmulAttribute(cublasLtMatmulDesc_t desc, int attribute, const void* buffer,
                                  size_t size) {
  return Set(Find<MatmulState>(desc, kMatmulCookie), kMatmulAttributes, attribute, buffer, size);
}
cublasStatus_t GetMatmulAttribute(cublasLtMatmulDesc_t desc, int attribute, void* buffer,
                                  size_t size, size_t* written) {
  return Get(FindMatmul(desc), kMatmulAttributes, attribute, buffer, size, written);
}
cublasStatus_t SetPreferenceAttribute(cublasLtMatmulPreference_t preference, int attribute,
                                      const void* buffer, size_t size) {
  return Set(Find<PreferenceState>(preference, kPreferenceCookie), kPreferenceAttributes, attribute,
             buffer, size);
}
cublasStatus_t GetPreferenceAttribute(cublasLtMatmulPreference_t preference, int attribute,
                                      void* buffer, size_t size, size_t* written) {
  return Get(FindPreference(preference), kPreferenceAttributes, attribute, buffer, size, written);
}

}  // namespace tally::libraries::cublaslt
