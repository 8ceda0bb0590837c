// Giving device memory back to the device once the client's work that may use it is issued
// (the release waits for the device's work itself): cudaFree, and pools that release blocks.
#pragma once

#include <cuda.h>

#include <utility>
#include <vector>

#include "common/status.h"
#include "server/handlers/handlers.h"

namespace tally::server {

// Frees the allocation at `base` on the client's `stream`: a pool's block goes back to its pool,
// which keeps it up to its release threshold; other memory is released. Returns what is to be
// released, already out of the client's allocation table (handlers/mem_pool.cc).
absl::StatusOr<std::vector<uint64_t>> FreeAllocation(Session& session, uint64_t base,
                                                     uint64_t stream);

// `bases` have left the client's allocation table already. Ready at once when there are none.
template <typename Response>
Deferred<Response> ReleaseAfterIssued(Session& session, std::vector<uint64_t> bases) {
  if (bases.empty()) return {[] { return Reply<Response>{}; }, true};
  const uint64_t ticket = session.Ticket();
  return {
      .finish = [&session, ticket, bases = std::move(bases)]() -> absl::StatusOr<Reply<Response>> {
        session.WaitIssued(ticket);
        for (const uint64_t base : bases) {
          TALLY_RETURN_IF_ERROR(session.FreeDeviceMemory(base));
        }
        return Reply<Response>{};
      }};
}

}  // namespace tally::server
