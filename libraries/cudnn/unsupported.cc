// Every libcudnn export the stand-in does not implement (cudnn_exports.def, generated from the
// installed libcudnn.so.9): a weak stub returning CUDNN_STATUS_NOT_SUPPORTED that says so once
// (client/unsupported_stub.h).
#include "client/unsupported_stub.h"

#define TALLY_CUDNN_UNSUPPORTED(name) \
  TALLY_UNSUPPORTED_STUB(name, 3000, "CUDNN_STATUS_NOT_SUPPORTED")

extern "C" {
#define TALLY_LIBRARY_EXPORT TALLY_CUDNN_UNSUPPORTED
#include "libraries/cudnn/cudnn_exports.def"
}
