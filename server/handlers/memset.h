// The one way memset handlers issue elements of 1, 2 or 4 bytes (memory.cc, box_copy.cc).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "server/backend/backend.h"

namespace tally::server {

// Enqueues on `stream` the setting of `bytes` bytes at `address` (a multiple of
// `element_size`, which is 1, 2 or 4) to elements holding the low bytes of `value`.
CUresult SetElements(const DriverApi& api, uint64_t address, uint32_t value, uint32_t element_size,
                     uint64_t bytes, CUstream stream);

}  // namespace tally::server
