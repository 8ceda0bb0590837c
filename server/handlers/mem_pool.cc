// Stream-ordered allocation and memory pools (CUDA Runtime API, "Stream Ordered Memory
// Allocator"): cudaMallocAsync takes a block its pool may reuse on that stream or allocates one,
// cudaFreeAsync gives it back to the pool, and what a pool gives back to the device (trimming,
// the release threshold, destruction) is freed once the client's work before it is issued.
// Unlike CUDA, which releases memory above the threshold at synchronising calls, a pool releases
// it at the free itself.
#include <cuda.h>

#include <utility>
#include <vector>

#include "common/status.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"
#include "server/handlers/release.h"

namespace tally::server {
namespace {

// Takes the released blocks out of the client's allocation table.
std::vector<uint64_t> Untrack(Session& session, std::vector<uint64_t> bases) {
  for (const uint64_t base : bases) session.allocations().Remove(base).IgnoreError();
  return bases;
}

// Whether the work the client enqueued before the block's free has finished: the stream that
// freed it is idle and that work was issued.
bool FreeFinished(Session& session, const FreedBlock& block) {
  if (!session.WorkIssued(block.ticket)) return false;
  const absl::StatusOr<CUstream> stream = session.FindStream(block.stream);
  return stream.ok() && session.api().cuStreamQuery(*stream) == CUDA_SUCCESS;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> FreeAllocation(Session& session, uint64_t base,
                                                     uint64_t stream) {
  MemPools& pools = session.mem_pools();
  const std::optional<uint64_t> owner = pools.OwnerOf(base);
  if (!owner) {
    TALLY_RETURN_IF_ERROR(session.allocations().Remove(base).status());
    return std::vector<uint64_t>{base};
  }
  TALLY_ASSIGN_OR_RETURN(MemPool * pool, pools.Find(*owner));
  TALLY_RETURN_IF_ERROR(session.FindStream(stream).status());
  pools.ForgetOwner(base);
  pool->Free(base, stream, session.Ticket());
  return Untrack(session, pool->TrimToThreshold());
}

absl::StatusOr<Reply<ipc::MemPoolCreateResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolCreateRequest>&) {
  return Reply<ipc::MemPoolCreateResponse>{{.pool = session.mem_pools().Create()}, {}};
}

// The pool's blocks in use stay the client's as plain allocations (CUDA releases them when they
// are freed); its free blocks go back to the device.
absl::StatusOr<Deferred<ipc::MemPoolDestroyResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolDestroyRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(MemPool pool, session.mem_pools().Destroy(request.fields.pool));
  return ReleaseAfterIssued<ipc::MemPoolDestroyResponse>(session, Untrack(session, pool.TrimTo(0)));
}

absl::StatusOr<Reply<ipc::MemPoolGetResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolGetRequest>& request) {
  const MemPools& pools = session.mem_pools();
  switch (request.fields.kind) {
    case ipc::PoolKind::kDefault:
      return Reply<ipc::MemPoolGetResponse>{{.pool = pools.default_pool()}, {}};
    case ipc::PoolKind::kCurrent:
      return Reply<ipc::MemPoolGetResponse>{{.pool = pools.current()}, {}};
  }
  return ClientError(CUDA_ERROR_INVALID_VALUE, "unknown pool kind");
}

absl::StatusOr<Reply<ipc::MemPoolSetCurrentResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolSetCurrentRequest>& request) {
  TALLY_RETURN_IF_ERROR(session.mem_pools().SetCurrent(request.fields.pool));
  return Reply<ipc::MemPoolSetCurrentResponse>{};
}

absl::StatusOr<Reply<ipc::MemPoolAllocResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolAllocRequest>& request) {
  const ipc::MemPoolAllocRequest& r = request.fields;
  if (r.size == 0) return ClientError(CUDA_ERROR_INVALID_VALUE, "zero-byte pool allocation");
  const uint64_t handle = r.pool != 0 ? r.pool : session.mem_pools().current();
  TALLY_ASSIGN_OR_RETURN(MemPool * pool, session.mem_pools().Find(handle));
  TALLY_RETURN_IF_ERROR(session.FindStream(r.stream).status());
  const auto finished = [&session](const FreedBlock& block) {
    return FreeFinished(session, block);
  };
  uint64_t base = 0;
  if (const std::optional<FreedBlock> reused = pool->Reuse(r.size, r.stream, finished)) {
    base = reused->base;
  } else {
    TALLY_ASSIGN_OR_RETURN(base, session.Allocate(r.size));
    pool->AddUsed(base, r.size);
  }
  session.mem_pools().SetOwner(base, handle);
  return Reply<ipc::MemPoolAllocResponse>{{.device_ptr = base}, {}};
}

absl::StatusOr<Deferred<ipc::MemPoolFreeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolFreeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(std::vector<uint64_t> released,
                         FreeAllocation(session, request.fields.device_ptr, request.fields.stream));
  return ReleaseAfterIssued<ipc::MemPoolFreeResponse>(session, std::move(released));
}

absl::StatusOr<Deferred<ipc::MemPoolTrimResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolTrimRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(MemPool * pool, session.mem_pools().Find(request.fields.pool));
  return ReleaseAfterIssued<ipc::MemPoolTrimResponse>(
      session, Untrack(session, pool->TrimTo(request.fields.keep_bytes)));
}

absl::StatusOr<Reply<ipc::MemPoolSetAttributeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolSetAttributeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(MemPool * pool, session.mem_pools().Find(request.fields.pool));
  TALLY_RETURN_IF_ERROR(pool->Set(request.fields.attribute, request.fields.value));
  return Reply<ipc::MemPoolSetAttributeResponse>{};
}

absl::StatusOr<Reply<ipc::MemPoolGetAttributeResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::MemPoolGetAttributeRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(MemPool * pool, session.mem_pools().Find(request.fields.pool));
  TALLY_ASSIGN_OR_RETURN(const uint64_t value, pool->Get(request.fields.attribute));
  return Reply<ipc::MemPoolGetAttributeResponse>{{.value = value}, {}};
}

}  // namespace tally::server
