// Fatbin registration and kernel lookup. The module is shared between clients by the registry;
// the handles are this client's own.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "ipc/content_hash.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {

namespace {

// Appends the request's piece to the client's upload; the whole image once it is complete.
absl::StatusOr<std::optional<std::vector<std::byte>>> AddPiece(
    Session& session, const ipc::RegisterFatbinRequest& request) {
  ModuleUpload& upload = session.module_upload();
  if (request.offset == 0) upload = {request.content_hash, request.image_size, {}};
  const uint64_t limit = std::min(session.client_limits().max_module_bytes, ipc::kMaxModuleImage);
  if (request.image_size == 0 || request.image_size > limit) {
    upload = {};
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("a module image of %d bytes (the limit is %d, tally-server "
                                       "--max-module-size)",
                                       request.image_size, limit));
  }
  if (request.offset == 0) {
    if (absl::Status room =
            session.CheckCount(session.modules().size(), session.client_limits().max_modules,
                               "module", "--max-modules");
        !room.ok()) {
      upload = {};
      return room;
    }
  }
  if (upload.size != request.image_size || upload.content_hash != request.content_hash ||
      upload.bytes.size() != request.offset) {
    upload = {};
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("module image piece at offset %d out of order",
                                       request.offset));
  }
  // Copied out of shared memory: the client could change the bytes while we parse them.
  TALLY_ASSIGN_OR_RETURN(std::span<std::byte> piece, session.ResolveBulk(request.piece));
  if (piece.empty() || piece.size() > request.image_size - request.offset) {
    upload = {};
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       absl::StrFormat("a %d-byte module image piece at offset %d of %d",
                                       piece.size(), request.offset, request.image_size));
  }
  upload.bytes.insert(upload.bytes.end(), piece.begin(), piece.end());
  if (upload.bytes.size() < upload.size) return std::nullopt;
  return std::exchange(upload, {}).bytes;
}

}  // namespace

absl::StatusOr<Reply<ipc::RegisterFatbinResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::RegisterFatbinRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(std::optional<std::vector<std::byte>> image,
                         AddPiece(session, request.fields));
  if (!image) return Reply<ipc::RegisterFatbinResponse>{{.module = 0}, {}};
  if (ipc::ContentHash(*image) != request.fields.content_hash) {
    return ClientError(CUDA_ERROR_INVALID_VALUE,
                       "the module image does not match its content hash");
  }
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<SharedModule> module,
                         session.server().modules.Register(*image));
  TALLY_RETURN_IF_ERROR(session.ClaimModule(*module));
  return Reply<ipc::RegisterFatbinResponse>{{.module = session.modules().Insert(std::move(module))},
                                            {}};
}

absl::StatusOr<Reply<ipc::GetFunctionResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::GetFunctionRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<SharedModule> * module,
                         session.modules().Find(request.fields.module));
  const std::string name(reinterpret_cast<const char*>(request.tail.data()), request.tail.size());
  TALLY_ASSIGN_OR_RETURN(const Kernel* kernel, (*module)->FindKernel(name));
  const auto& params = kernel->signature.params;
  // The response must fit one ring record; CUDA's own limit is 32764 bytes of parameters.
  constexpr size_t kMaxParams = 4096;
  if (params.size() > kMaxParams) {
    return ClientError(CUDA_ERROR_NOT_SUPPORTED,
                       absl::StrFormat("kernel %s has %d parameters, at most %d are supported",
                                       name, params.size(), kMaxParams));
  }
  Reply<ipc::GetFunctionResponse> reply;
  reply.fields.param_count = static_cast<uint32_t>(params.size());
  reply.fields.param_buffer_size = kernel->signature.param_buffer_size;
  const DriverApi& api = session.api();
  const std::pair<CUfunction_attribute, int32_t*> attributes[] = {
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &reply.fields.max_threads_per_block},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &reply.fields.static_shared_bytes},
      {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &reply.fields.max_dynamic_shared_bytes}};
  for (const auto& [attribute, value] : attributes) {
    TALLY_RETURN_IF_ERROR(
        CheckCu(api.cuFuncGetAttribute(value, attribute, kernel->function), "cuFuncGetAttribute"));
  }
  reply.fields.function = session.functions().Insert({*module, kernel, request.fields.module});
  reply.tail.resize(params.size() * sizeof(ipc::ParamSlot));
  for (size_t i = 0; i < params.size(); ++i) {
    const ipc::ParamSlot slot{params[i].offset, params[i].size};
    std::memcpy(reply.tail.data() + i * sizeof(slot), &slot, sizeof(slot));
  }
  return reply;
}

// The functions found through this handle go too: they would otherwise keep the module loaded
// until the session ends (queued launches hold it themselves).
absl::StatusOr<Reply<ipc::ModuleUnloadResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::ModuleUnloadRequest>& request) {
  TALLY_RETURN_IF_ERROR(session.modules().Remove(request.fields.module).status());
  session.functions().EraseIf([&](const FunctionEntry& function) {
    return function.module_handle == request.fields.module;
  });
  return Reply<ipc::ModuleUnloadResponse>{};
}

absl::StatusOr<Reply<ipc::GetGlobalResponse>> Handle(
    Session& session, const ipc::Decoded<ipc::GetGlobalRequest>& request) {
  TALLY_ASSIGN_OR_RETURN(std::shared_ptr<SharedModule> * module,
                         session.modules().Find(request.fields.module));
  const std::string name(reinterpret_cast<const char*>(request.tail.data()), request.tail.size());
  TALLY_ASSIGN_OR_RETURN(const auto global, (*module)->FindGlobal(name));
  session.AddGlobal(global.first, global.second);
  return Reply<ipc::GetGlobalResponse>{{.device_ptr = global.first, .size = global.second}, {}};
}

}  // namespace tally::server
