// Stream work other than launches and copies, as the entry points and graph replays post it:
// event records and waits, host functions, and the events a graph instantiation keeps. Each
// adds to the graph its stream is capturing instead, where it is capturing (capture.h).
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ipc/cuda_calls.h"

namespace tally::client {

absl::StatusOr<cudaEvent_t> CreateEventWithFlags(unsigned int flags);
absl::Status DestroyEvent(cudaEvent_t event);
// cudaEventRecordWithFlags: `flags` cudaEventRecordDefault or cudaEventRecordExternal (which
// only matters while capturing).
absl::Status RecordEventOn(cudaEvent_t event, cudaStream_t stream, unsigned int flags = 0);
// cudaStreamWaitEvent: `flags` cudaEventWaitDefault or cudaEventWaitExternal.
absl::Status WaitEventOn(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
// A host function run in stream order by the shim's callback thread (host_callbacks.cc); the
// stream is checked at the call.
absl::Status EnqueueHostFunction(cudaStream_t stream, ipc::HostCallbackKind kind, void* function,
                                 void* data);

}  // namespace tally::client
