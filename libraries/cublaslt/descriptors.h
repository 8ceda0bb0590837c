// cuBLASLt's descriptors (matmul, matrix layout, matmul preference) as the stand-in keeps them:
// in the opaque storage cublasLt.h gives each (so that the *Init calls on stack memory work as
// the *Create ones do), behind a cookie that tells a live descriptor of its kind from anything
// else. Attributes are set and read through one table per kind (attribute, size, field), with the
// sizes cublasLt.h documents.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

namespace tally::libraries::cublaslt {

struct LayoutState {
  uint64_t cookie;
  uint32_t type;  // cudaDataType
  int32_t order;  // cublasLtOrder_t
  uint64_t rows;
  uint64_t cols;
  int64_t ld;
  int32_t batch_count;
  int64_t batch_stride;  // elements between batch entries
  int64_t plane_offset;
};

struct MatmulState {
  uint64_t cookie;
  int32_t compute_type;            // cublasComputeType_t
  int32_t scale_type;              // cudaDataType
  int32_t pointer_mode;            // cublasLtPointerMode_t
  int32_t transa, transb, transc;  // cublasOperation_t
  int32_t fill_mode;
  uint32_t epilogue;  // cublasLtEpilogue_t
  const void* bias;
  int64_t bias_batch_stride;
  int32_t bias_type;  // cudaDataType, -1: D's
  int32_t sm_count_target;
  int8_t fast_accumulation;
};

struct PreferenceState {
  uint64_t cookie;
  uint32_t search_mode;
  uint64_t max_workspace_bytes;
  uint32_t reduction_scheme_mask;
  uint32_t min_alignment[4];  // A, B, C, D
  float max_waves;
  uint64_t implementation_mask;
};

static_assert(sizeof(LayoutState) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(MatmulState) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(PreferenceState) <= sizeof(cublasLtMatmulPreferenceOpaque_t));

// The live descriptor behind a handle, or null (a null pointer, or memory without the cookie).
const LayoutState* FindLayout(cublasLtMatrixLayout_t layout);
const MatmulState* FindMatmul(cublasLtMatmulDesc_t desc);
const PreferenceState* FindPreference(cublasLtMatmulPreference_t preference);

// Fresh descriptors in `storage` (at least the opaque type's size), with cuBLASLt's defaults.
cublasStatus_t InitLayout(void* storage, size_t size, cudaDataType type, uint64_t rows,
                          uint64_t cols, int64_t ld);
cublasStatus_t InitMatmul(void* storage, size_t size, cublasComputeType_t compute,
                          cudaDataType scale);
cublasStatus_t InitPreference(void* storage, size_t size);
// Clears the cookie: the storage is no descriptor any more.
void Forget(void* storage);

// Attribute access (cublasLt*SetAttribute / GetAttribute): INVALID_VALUE for a size other than
// the attribute's or an unknown attribute; NOT_SUPPORTED (said once on stderr) for attributes
// the stand-in does not implement (scaling pointers of FP8, auxiliary epilogue buffers, ...).
cublasStatus_t SetLayoutAttribute(cublasLtMatrixLayout_t layout, int attribute, const void* buffer,
                                  size_t size);
cublasStatus_t GetLayoutAttribute(cublasLtMatrixLayout_t layout, int attribute, void* buffer,
                                  size_t size, size_t* written);
cublasStatus_t SetMatmulAttribute(cublasLtMatmulDesc_t desc, int attribute, const void* buffer,
                                  size_t size);
cublasStatus_t GetMatmulAttribute(cublasLtMatmulDesc_t desc, int attribute, void* buffer,
                                  size_t size, size_t* written);
cublasStatus_t SetPreferenceAttribute(cublasLtMatmulPreference_t preference, int attribute,
                                      const void* buffer, size_t size);
cublasStatus_t GetPreferenceAttribute(cublasLtMatmulPreference_t preference, int attribute,
                                      void* buffer, size_t size, size_t* written);

}  // namespace tally::libraries::cublaslt
