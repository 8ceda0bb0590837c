// ClientError: the CUresult rides in a Status payload so that it survives propagation through
// TALLY_RETURN_IF_ERROR unchanged.
#include "server/cuda_result.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cuda_abi/cu_result_table.h"

namespace tally::server {
namespace {

constexpr absl::string_view kResultPayload = "tally.cuda/CUresult";

}  // namespace

absl::Status ClientError(CUresult result, absl::string_view message) {
  absl::Status status(absl::StatusCode::kFailedPrecondition, message);
  status.SetPayload(kResultPayload, absl::Cord(std::to_string(static_cast<int>(result))));
  return status;
}

absl::Status CheckCu(CUresult result, absl::string_view call) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  return ClientError(result,
                     absl::StrCat(call, " failed with CUresult ", static_cast<int>(result)));
}

std::string CuResultText(CUresult result) {
  const char* name = CuResultName(result);
  return name != nullptr ? name : absl::StrCat("CUresult ", static_cast<int>(result));
}

std::optional<CUresult> ResultOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kResultPayload);
  int value = 0;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &value)) return std::nullopt;
  return static_cast<CUresult>(value);
}

}  // namespace tally::server
