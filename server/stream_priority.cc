// The two bands of the device's stream priorities.
#include "server/stream_priority.h"

#include <algorithm>

namespace tally::server {

int BackendStreamPriority(int requested, ClientPriority client, int least, int greatest) {
  const int levels = least - greatest + 1;
  if (levels <= 1) return least;
  requested = std::clamp(requested, greatest, least);
  const int low_band = levels / 2;  // the less important half (the larger one when odd)
  const int high_band = levels - low_band;
  const bool critical = client >= ClientPriority::High() && high_band > 0;
  const int band = critical ? high_band : low_band;
  const int band_least = critical ? least - low_band : least;
  // The client's position from its least important priority, scaled into the band.
  const int offset = (least - requested) * (band - 1) / (levels - 1);
  return band_least - offset;
}

}  // namespace tally::server
