// PTX loaded as machine code from the code cache, linked once (machine_code.h).
#include "server/machine_code.h"

#include <cstring>
#include <span>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "ipc/content_hash.h"
#include "server/cuda_result.h"

namespace tally::server {
namespace {

// Entries of machine code: part of every key, so that they are never read as transformed PTX,
// and a server with another layout never reads this one's.
constexpr char kFormat[] = "machine-code-1";
constexpr size_t kLogBytes = 4096;

// The driver's error log from `log`, a buffer it may have written.
std::string LogText(std::string log) {
  log.resize(std::strlen(log.c_str()));
  return log.empty() ? "the driver gave no reason" : log;
}

}  // namespace

LoadOutcome LoadImage(const DriverApi& api, CUmodule* module, const void* image) {
  std::string log(kLogBytes, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log.data(), reinterpret_cast<void*>(uintptr_t{log.size()})};
  LoadOutcome outcome;
  outcome.result = api.cuModuleLoadDataEx(module, image, 2, options, values);
  if (outcome.result != CUDA_SUCCESS) outcome.log = LogText(std::move(log));
  return outcome;
}

MachineCode::MachineCode(const DriverApi& api, std::shared_ptr<CodeCache> cache, std::string device,
                         int driver_version, std::shared_ptr<FormsWorker> filler)
    : api_(api),
      cache_(std::move(cache)),
      device_(std::move(device)),
      driver_version_(driver_version),
      filler_(std::move(filler)) {
  const bool linker = api.cuLinkCreate != nullptr && api.cuLinkAddData != nullptr &&
                      api.cuLinkComplete != nullptr && api.cuLinkDestroy != nullptr;
  if (cache_ != nullptr && !linker) {
    TALLY_LOG_WARN(
        "the driver has no cuLink*: modules load from PTX, transformed forms are cached as PTX "
        "only");
    cache_ = nullptr;
  }
}

CodeKey MachineCode::Key(const std::string& ptx) const {
  return {.ptx_hash = ipc::ContentHash(std::as_bytes(std::span(ptx))),
          .kernel = "",
          .transform_version = 0,
          .options = kFormat,
          .device = device_,
          .driver_version = driver_version_};
}

absl::StatusOr<std::string> MachineCode::Link(const std::string& ptx) const {
  // The log options are the link's: the driver writes its log there until cuLinkDestroy (CUDA
  // Driver API, cuLinkCreate: "optionValues must remain valid for the life of the CUlinkState
  // if output options are used"), so both outlive the state.
  std::string log(kLogBytes, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log.data(), reinterpret_cast<void*>(uintptr_t{log.size()})};
  CUlinkState state = nullptr;
  CUresult result = api_.cuLinkCreate(2, options, values, &state);
  if (result != CUDA_SUCCESS) {
    return absl::InternalError(absl::StrFormat("cuLinkCreate: %s", CuResultText(result)));
  }
  absl::Cleanup destroy = [&] { api_.cuLinkDestroy(state); };
  // "PTX must be NULL-terminated" (cuLinkAddData): the size counts the NUL.
  result = api_.cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()),
                              ptx.size() + 1, "tally", 0, nullptr, nullptr);
  void* cubin = nullptr;
  size_t size = 0;
  if (result == CUDA_SUCCESS) result = api_.cuLinkComplete(state, &cubin, &size);
  if (result != CUDA_SUCCESS) {
    // A copy of the log: its buffer stays the link state's until cuLinkDestroy.
    return absl::InternalError(absl::StrFormat("%s: %s", CuResultText(result), LogText(log)));
  }
  // "The cubin is owned by state" (cuLinkComplete): copied before `destroy` runs.
  return std::string(static_cast<const char*>(cubin), size);
}

size_t MachineCode::filling() const {
  std::lock_guard lock(mutex_);
  return filling_.size();
}

bool MachineCode::Unlinkable(const CodeKey& key) const {
  std::lock_guard lock(mutex_);
  return unlinkable_.contains(key.Text());
}

bool MachineCode::LinkAndStore(const CodeKey& key, const std::string& ptx, CUmodule* module) const {
  absl::StatusOr<std::string> image = Link(ptx);
  if (image.ok() && module != nullptr) {
    const LoadOutcome loaded = LoadImage(api_, module, image->data());
    if (loaded.result != CUDA_SUCCESS) {
      image = absl::InternalError(absl::StrFormat("the machine code it made did not load: %s: %s",
                                                  CuResultText(loaded.result), loaded.log));
    }
  }
  if (!image.ok()) {
    ++counters_.link_failed;
    TALLY_LOG_WARN("the linker did not compile a module ({}): it loads as PTX",
                   std::string(image.status().message()));
    std::lock_guard lock(mutex_);
    unlinkable_.insert(key.Text());
    return false;
  }
  // On the filler the image is stored unloaded: loading it there would take device memory for
  // its variables behind the clients' backs (cuMemGetInfo). Should the driver refuse it later,
  // Load counts it refused and links it again.
  cache_->Store(key, *image);
  ++counters_.linked;  // once stored: a reader of the counter finds the entry
  return true;
}

void MachineCode::FillLater(const CodeKey& key, const std::string& ptx) const {
  std::string text = key.Text();
  {
    std::lock_guard lock(mutex_);
    if (!filling_.insert(text).second) return;
  }
  const bool queued = filler_->Submit([self = weak_from_this(), key, ptx, text] {
    const std::shared_ptr<const MachineCode> held = self.lock();
    if (held == nullptr) return;  // its registry went while the job waited
    held->LinkAndStore(key, ptx, nullptr);
    std::lock_guard lock(held->mutex_);
    held->filling_.erase(text);
  });
  if (queued) return;
  // The queue is full or stopped: a later load of the same PTX asks again.
  std::lock_guard lock(mutex_);
  filling_.erase(text);
}

LoadOutcome MachineCode::Load(CUmodule* module, const std::string& ptx) const {
  if (cache_ == nullptr) return LoadImage(api_, module, ptx.c_str());
  const CodeKey key = Key(ptx);
  if (std::optional<std::string> found = cache_->Find(key)) {
    const LoadOutcome loaded = LoadImage(api_, module, found->data());
    if (loaded.result == CUDA_SUCCESS) {
      ++counters_.found;
      return loaded;
    }
    // Whole on disk (its checksum held) but not what this driver loads: made again, replaced.
    ++counters_.refused;
    TALLY_LOG_WARN("code cache: the driver refused machine code from it ({}: {}): compiled again",
                   CuResultText(loaded.result), loaded.log);
  }
  // PTX the linker refused once is not linked again (on NVIDIA's driver, another JIT of it).
  if (Unlinkable(key)) return LoadImage(api_, module, ptx.c_str());
  if (filler_ == nullptr) {
    if (LinkAndStore(key, ptx, module)) return LoadOutcome{};
    return LoadImage(api_, module, ptx.c_str());
  }
  const LoadOutcome loaded = LoadImage(api_, module, ptx.c_str());
  if (loaded.result == CUDA_SUCCESS) FillLater(key, ptx);
  return loaded;
}

}  // namespace tally::server
