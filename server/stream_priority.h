// Which CUDA stream priority a client's stream gets on the device. The device's range is split
// in two bands: latency-critical clients (priority level high or above) get the more important
// half, all others the rest, so that the hardware dispatches their blocks first (CUDA Runtime
// API, "Stream Priorities"); within its band a client's own stream priorities keep their order.
// The band is chosen when the stream is created: a client whose level changes later keeps its
// existing streams' bands (the scheduler's holding and preemption still follow the new level).
#pragma once

#include "common/client_priority.h"
#include "common/stream_priority.h"

namespace tally::server {

// `requested` is the client's stream priority; [greatest, least] the device's range.
StreamPriority BackendStreamPriority(StreamPriority requested, ClientPriority client,
                                     StreamPriority least, StreamPriority greatest);

}  // namespace tally::server
