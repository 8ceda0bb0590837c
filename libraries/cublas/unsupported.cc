// Every libcublas export the stand-in does not implement (cublas_exports.def, generated from the
// installed libcublas.so.13): a weak stub returning CUBLAS_STATUS_NOT_SUPPORTED that says so once
// (client/unsupported_stub.h). Exports that return no status (the legacy API's float- and
// void-returning functions) get no stub and are not exported: a program importing one fails to
// start with the dynamic loader naming it, instead of reading a value nobody computed.
#include "client/unsupported_stub.h"

#define TALLY_CUBLAS_UNSUPPORTED(name) \
  TALLY_UNSUPPORTED_STUB(name, 15, "CUBLAS_STATUS_NOT_SUPPORTED")

extern "C" {
#define TALLY_LIBRARY_EXPORT TALLY_CUBLAS_UNSUPPORTED
#include "libraries/cublas/cublas_exports.def"
}
