// Every libcublasLt export the stand-in does not implement (cublaslt_exports.def, generated from
// the installed libcublasLt.so.13): a weak stub returning CUBLAS_STATUS_NOT_SUPPORTED that says
// so once (client/unsupported_stub.h). The four exports that return a value instead of a status
// (versions, status names) are implemented.
#include "client/unsupported_stub.h"

#define TALLY_CUBLASLT_UNSUPPORTED(name) \
  TALLY_UNSUPPORTED_STUB(name, 15, "CUBLAS_STATUS_NOT_SUPPORTED")

extern "C" {
#define TALLY_LIBRARY_EXPORT TALLY_CUBLASLT_UNSUPPORTED
#include "libraries/cublaslt/cublaslt_exports.def"
}
