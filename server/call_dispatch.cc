// The switch over ipc/cuda_calls.def: decoding, the handler call and the response encoding are
// generated once per mode, so adding a call is one .def line, two structs and a handler.
#include "server/call_dispatch.h"

#include <cstring>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status.h"
#include "ipc/message.h"
#include "server/cuda_result.h"
#include "server/handlers/handlers.h"

namespace tally::server {
namespace {

constexpr size_t kMaxReasonBytes = 1024;

template <ipc::WireMessage T>
std::vector<std::byte> Encode(uint64_t sequence, uint32_t flags, const T& fields,
                              std::span<const std::byte> tail) {
  const ipc::MessageHeader header{T::kType, flags, sequence,
                                  static_cast<uint32_t>(sizeof(T) + tail.size()), 0};
  std::vector<std::byte> record(sizeof(header) + sizeof(T) + tail.size());
  std::memcpy(record.data(), &header, sizeof(header));
  std::memcpy(record.data() + sizeof(header), &fields, sizeof(T));
  if (!tail.empty())
    std::memcpy(record.data() + sizeof(header) + sizeof(T), tail.data(), tail.size());
  return record;
}

// The CUresult of a handler's failure, or the failure itself when the client did not cause it
// in a way CUDA reports (a broken message).
absl::StatusOr<CUresult> ResultOrViolation(const absl::Status& status) {
  std::optional<CUresult> result = ResultOf(status);
  if (!result) return status;
  TALLY_LOG_DEBUG("answering CUresult {}: {}", static_cast<int>(*result),
                  std::string(status.message()));
  return *result;
}

// The response record for a handler's answer: the reply, or a CallError for a failure the
// client caused. Another failure is returned as is: the message was malformed. An error that
// says the shared context faulted becomes the client's own error of that fault (`faults`).
// `flags`: kFlagDeviceOutput or 0.
template <typename T>
absl::StatusOr<std::vector<std::byte>> EncodeAnswer(uint64_t sequence,
                                                    const absl::StatusOr<Reply<T>>& reply,
                                                    const ContextFaultView& faults = {},
                                                    uint32_t flags = 0) {
  if (reply.ok() && !faults.FenceViolated()) {
    return Encode(sequence, flags, reply->fields, reply->tail);
  }
  if (reply.ok()) {
    return EncodeAnswer<T>(sequence,
                           ClientError(CUDA_ERROR_ILLEGAL_ADDRESS,
                                       "a kernel of this program reached for memory that is not "
                                       "its own (tally-server --isolation)"),
                           {}, flags);
  }
  TALLY_ASSIGN_OR_RETURN(CUresult result, ResultOrViolation(reply.status()));
  result = faults.Answer(result);
  // The explanation, bounded so that it always fits a response record.
  const absl::string_view reason = reply.status().message().substr(0, kMaxReasonBytes);
  return Encode(sequence, flags | ipc::kFlagError,
                ipc::CallError{static_cast<int32_t>(result), 0},
                std::as_bytes(std::span(reason.data(), reason.size())));
}

// The flag of a synchronising call's answer: what the client's finished work printed goes with
// it, as CUDA prints its printf buffer at synchronising calls.
uint32_t DeviceOutputFlag(const DeviceOutputSource& output) {
  return output.Collect() ? ipc::kFlagDeviceOutput : 0;
}

// The client's sticky error (Session::StickyError) that answers this call instead of its
// handler; CUDA_SUCCESS when the handler runs. The device's properties stay readable, the
// client's answers to host functions are still taken, so that its streams drain, and its device
// output is still given (the message of the assert that faulted it).
template <typename Request>
CUresult StickyErrorFor(Session& session) {
  if constexpr (std::is_same_v<Request, ipc::GetDeviceInfoRequest> ||
                std::is_same_v<Request, ipc::HostCallbackDoneRequest> ||
                std::is_same_v<Request, ipc::TakeDeviceOutputRequest>) {
    return CUDA_SUCCESS;
  } else {
    return session.StickyError();
  }
}

template <typename Response>
absl::StatusOr<Outcome> AnswerStickyError(uint64_t sequence, CUresult sticky, uint32_t flags = 0) {
  const absl::StatusOr<Reply<Response>> failed = ClientError(
      sticky, sticky == CUDA_ERROR_DEVICE_UNAVAILABLE
                  ? std::string("another program's kernel faulted the device context this "
                                "program shared; the error is sticky: reconnect")
                  : absl::StrFormat("a kernel of this program faulted earlier (%s); the error "
                                    "is sticky, as in CUDA",
                                    CuResultText(sticky)));
  return EncodeAnswer(sequence, failed, {}, flags);
}

template <typename Request>
absl::StatusOr<Outcome> HandleSync(Session& session, const ipc::ReceivedMessage& message) {
  using Response = typename ipc::CallTraits<Request>::Response;
  TALLY_ASSIGN_OR_RETURN(const ipc::Decoded<Request> request, ipc::Decode<Request>(message));
  if (const CUresult sticky = StickyErrorFor<Request>(session); sticky != CUDA_SUCCESS) {
    return AnswerStickyError<Response>(message.header.sequence, sticky);
  }
  return EncodeAnswer(message.header.sequence, Handle(session, request), session.fault_view());
}

template <typename Request>
absl::StatusOr<Outcome> HandleWait(Session& session, const ipc::ReceivedMessage& message) {
  using Response = typename ipc::CallTraits<Request>::Response;
  TALLY_ASSIGN_OR_RETURN(const ipc::Decoded<Request> request, ipc::Decode<Request>(message));
  const uint64_t sequence = message.header.sequence;
  if (const CUresult sticky = StickyErrorFor<Request>(session); sticky != CUDA_SUCCESS) {
    // The fault's own message (a failed assert's) reaches the program with it.
    return AnswerStickyError<Response>(sequence, sticky, DeviceOutputFlag(session.device_output()));
  }
  const ContextFaultView faults = session.fault_view();
  absl::StatusOr<Deferred<Response>> deferred = Handle(session, request);
  if (!deferred.ok()) return EncodeAnswer<Response>(sequence, deferred.status(), faults);
  if (deferred->ready) {
    absl::StatusOr<Reply<Response>> reply = deferred->finish();
    return EncodeAnswer(sequence, reply, faults, DeviceOutputFlag(session.device_output()));
  }
  return LaterResponse([sequence, faults, finish = std::move(deferred->finish),
                        output = session.device_output()] {
    absl::StatusOr<Reply<Response>> reply = finish();
    absl::StatusOr<std::vector<std::byte>> record =
        EncodeAnswer(sequence, reply, faults, DeviceOutputFlag(output));
    if (record.ok()) return *std::move(record);
    // Waiting cannot meet a malformed message (that was checked before); still, answer.
    const absl::StatusOr<Reply<Response>> unknown = ClientError(CUDA_ERROR_UNKNOWN, "wait failed");
    return *EncodeAnswer(sequence, unknown);
  });
}

template <typename Request>
absl::StatusOr<Outcome> HandleAsync(Session& session, const ipc::ReceivedMessage& message) {
  TALLY_ASSIGN_OR_RETURN(const ipc::Decoded<Request> request, ipc::Decode<Request>(message));
  // After a fault the client's work is dropped: its next synchronising call reports the error.
  if (StickyErrorFor<Request>(session) != CUDA_SUCCESS) return std::monostate{};
  const absl::Status status = Handle(session, request);
  if (!status.ok()) {
    TALLY_ASSIGN_OR_RETURN(CUresult result, ResultOrViolation(status));
    result = session.fault_view().Answer(result);
    session.EnqueueFailure(result, absl::StrFormat("%s (%s)", ipc::CallTraits<Request>::kName,
                                                   status.message()));
  }
  return std::monostate{};
}

}  // namespace

absl::StatusOr<Outcome> HandleCall(Session& session, std::span<const std::byte> record) {
  TALLY_ASSIGN_OR_RETURN(const ipc::ReceivedMessage message, ipc::ParseMessage(record));
  switch (message.header.type) {
#define TALLY_INTERNAL_kSync(name) return HandleSync<ipc::name##Request>(session, message);
#define TALLY_INTERNAL_kWait(name) return HandleWait<ipc::name##Request>(session, message);
#define TALLY_INTERNAL_kAsync(name) return HandleAsync<ipc::name##Request>(session, message);
#define TALLY_CUDA_CALL(name, id, mode)        \
  case ipc::RequestType(ipc::CallId::k##name): \
    TALLY_INTERNAL_##mode(name)
#include "ipc/cuda_calls.def"
#undef TALLY_INTERNAL_kSync
#undef TALLY_INTERNAL_kWait
#undef TALLY_INTERNAL_kAsync
  }
  return ipc::UnknownMessageType(message.header.type);
}

}  // namespace tally::server
