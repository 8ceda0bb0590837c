// Every libcudart and libcuda export the shim does not implement (client/cudart_exports.def and
// client/driver_exports.def, generated from the installed libcudart and libcuda stub): a weak
// stub that returns cudaErrorNotSupported (CUDA_ERROR_NOT_SUPPORTED has the same value) and logs
// the name once (client/unsupported_stub.h). Stubs exist only for the functions whose
// declarations in the toolkit's headers return an error code (cudaError_t, CUresult:
// TALLY_LIBRARY_EXPORT); the generator lists the others (structs, pointers, strings:
// TALLY_LIBRARY_VALUE_EXPORT) apart, and the shim implements every one of them (abi_test.cc
// checks), so that no stub returns garbage where the caller expects a value.
#include "client/unsupported_stub.h"

// cudaErrorNotSupported, CUDA_ERROR_NOT_SUPPORTED
#define TALLY_CUDA_UNSUPPORTED(name) TALLY_UNSUPPORTED_STUB(name, 801, "not supported")

extern "C" {
#define TALLY_LIBRARY_EXPORT TALLY_CUDA_UNSUPPORTED
#include "client/cudart_exports.def"
#define TALLY_LIBRARY_EXPORT TALLY_CUDA_UNSUPPORTED
#include "client/driver_exports.def"
}
