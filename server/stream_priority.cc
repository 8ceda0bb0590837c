// The two bands of the device's stream priorities.
#include "server/stream_priority.h"

namespace tally::server {

StreamPriority BackendStreamPriority(StreamPriority requested, ClientPriority client,
                                     StreamPriority least_priority,
                                     StreamPriority greatest_priority) {
  const int least = least_priority.value();
  const int levels = least - greatest_priority.value() + 1;
  if (levels <= 1) return least_priority;
  const int position = requested.ClampedTo(least_priority, greatest_priority).value();
  const int low_band = levels / 2;  // the less important half (the larger one when odd)
  const int high_band = levels - low_band;
  const bool critical = client >= ClientPriority::High() && high_band > 0;
  const int band = critical ? high_band : low_band;
  const int band_least = critical ? least - low_band : least;
  // The client's position from its least important priority, scaled into the band.
  const int offset = (least - position) * (band - 1) / (levels - 1);
  return StreamPriority(band_least - offset);
}

}  // namespace tally::server
