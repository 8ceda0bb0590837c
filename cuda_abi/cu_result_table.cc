// The table generated from cuda.h by gen_cu_errors.py.
#include "cuda_abi/cu_result_table.h"

namespace tally {

const char* CuResultName(CUresult code) {
  switch (code) {
#define TALLY_CU_ERROR(name, description) \
  case name:                              \
    return #name;
#include "cuda_abi/cu_errors.def"
    default:
      return nullptr;
  }
}

const char* CuResultDescription(CUresult code) {
  switch (code) {
#define TALLY_CU_ERROR(name, description) \
  case name:                              \
    return description;
#include "cuda_abi/cu_errors.def"
    default:
      return nullptr;
  }
}

}  // namespace tally
