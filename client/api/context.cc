// Driver API contexts, kept in the shim (CUDA Driver API, "Context Management" and "Primary
// Context Management"). A client has one device and one server session, so every context it
// creates shares the client's memory, modules and streams on the server: a context is a token
// that the calling thread's stack of current contexts holds, as CUDA keeps that stack. Where a
// thread has not made a context current, the primary context is current (the CUDA runtime makes
// it current before its first call; the shim's runtime API needs no context).
//
// __CUDA_API_VERSION_INTERNAL: cuda.h declares cuCtxCreate and cuCtxCreate_v2 ... apart.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "client/channel.h"
#include "client/entry.h"
#include "client/handles.h"
#include "common/status.h"

using tally::client::CheckDevice;
using tally::client::CheckOut;
using tally::client::DriverError;
using tally::client::DriverCall;
namespace ipc = tally::ipc;

namespace {

// Handles are never dereferenced: a CUcontext is a serial number shifted into a pointer, checked
// against the live ones, so a destroyed or forged context is CUDA_ERROR_INVALID_CONTEXT.
class Contexts {
 public:
  static Contexts& Get() {
    static Contexts* const contexts = new Contexts;  // never destroyed: see Channel::Get
    return *contexts;
  }

  CUcontext primary() const { return primary_; }

  CUcontext Create(unsigned int flags) {
    std::lock_guard lock(mutex_);
    const CUcontext context = Mint();
    flags_[context] = flags;
    return context;
  }
  absl::Status Destroy(CUcontext context) {
    std::lock_guard lock(mutex_);
    if (context == primary_) {
      return DriverError(CUDA_ERROR_INVALID_CONTEXT,
                         "the primary context is released with cuDevicePrimaryCtxRelease");
    }
    if (flags_.erase(context) == 0) return Invalid(context);
    return absl::OkStatus();
  }
  absl::StatusOr<unsigned int> Flags(CUcontext context) {
    std::lock_guard lock(mutex_);
    auto it = flags_.find(context);
    if (it == flags_.end()) return Invalid(context);
    return it->second;
  }
  absl::Status SetPrimaryFlags(unsigned int flags) {
    std::lock_guard lock(mutex_);
    flags_[primary_] = flags;
    return absl::OkStatus();
  }
  void RetainPrimary() {
    std::lock_guard lock(mutex_);
    ++primary_retains_;
  }
  absl::Status ReleasePrimary() {
    std::lock_guard lock(mutex_);
    if (primary_retains_ == 0) {
      return DriverError(CUDA_ERROR_INVALID_CONTEXT, "the primary context is not retained");
    }
    --primary_retains_;
    return absl::OkStatus();
  }
  bool PrimaryRetained() {
    std::lock_guard lock(mutex_);
    return primary_retains_ > 0;
  }

 private:
  Contexts() : primary_(Mint()) { flags_[primary_] = 0; }
  CUcontext Mint() { return reinterpret_cast<CUcontext>((next_serial_++ << 4) | 0xc); }
  static absl::Status Invalid(CUcontext context) {
    return DriverError(CUDA_ERROR_INVALID_CONTEXT,
                       "no such context: " + std::to_string(reinterpret_cast<uintptr_t>(context)));
  }

  std::mutex mutex_;
  uint64_t next_serial_ = 1;
  CUcontext primary_;
  absl::flat_hash_map<CUcontext, unsigned int> flags_;  // the live contexts
  int primary_retains_ = 0;
};

// The calling thread's context stack, top last.
thread_local std::vector<CUcontext> stack;

CUcontext Current() { return stack.empty() ? Contexts::Get().primary() : stack.back(); }

// A context argument: `context`, or the current one when null.
absl::StatusOr<CUcontext> ContextOrCurrent(CUcontext context) {
  if (context == nullptr) return Current();
  TALLY_RETURN_IF_ERROR(Contexts::Get().Flags(context).status());
  return context;
}

absl::Status CreateContext(CUcontext* context, unsigned int flags, CUdevice device) {
  TALLY_RETURN_IF_ERROR(CheckOut(context));
  TALLY_RETURN_IF_ERROR(CheckDevice(device));
  *context = Contexts::Get().Create(flags);
  stack.push_back(*context);
  return absl::OkStatus();
}

absl::Status DestroyContext(CUcontext context) {
  TALLY_RETURN_IF_ERROR(Contexts::Get().Destroy(context));
  std::erase(stack, context);
  return absl::OkStatus();
}

absl::Status PushContext(CUcontext context) {
  if (context == nullptr) return DriverError(CUDA_ERROR_INVALID_CONTEXT, "null context");
  TALLY_RETURN_IF_ERROR(Contexts::Get().Flags(context).status());
  stack.push_back(context);
  return absl::OkStatus();
}

absl::Status PopContext(CUcontext* context) {
  if (stack.empty()) {
    return DriverError(CUDA_ERROR_INVALID_CONTEXT, "no context was pushed on this thread");
  }
  if (context != nullptr) *context = stack.back();
  stack.pop_back();
  return absl::OkStatus();
}

absl::Status Synchronize(CUcontext context) {
  TALLY_RETURN_IF_ERROR(ContextOrCurrent(context).status());
  TALLY_ASSIGN_OR_RETURN(tally::client::Channel * channel, tally::client::Channel::Get());
  return channel->Call(ipc::DeviceSynchronizeRequest{}).status();
}

absl::Status GetDevice(CUdevice* device, CUcontext context) {
  TALLY_RETURN_IF_ERROR(CheckOut(device));
  TALLY_RETURN_IF_ERROR(ContextOrCurrent(context).status());
  *device = 0;
  return absl::OkStatus();
}

}  // namespace

namespace tally::client {

CUcontext PrimaryContext() { return Contexts::Get().primary(); }
CUcontext CurrentContext() { return Current(); }

}  // namespace tally::client

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(context));
    TALLY_RETURN_IF_ERROR(CheckDevice(device));
    Contexts::Get().RetainPrimary();
    *context = Contexts::Get().primary();
    return absl::OkStatus();
  });
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckDevice(device));
    return Contexts::Get().ReleasePrimary();
  });
}

CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return cuDevicePrimaryCtxRelease_v2(device); }

CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(flags));
    TALLY_RETURN_IF_ERROR(CheckOut(active));
    TALLY_RETURN_IF_ERROR(CheckDevice(device));
    TALLY_ASSIGN_OR_RETURN(*flags, Contexts::Get().Flags(Contexts::Get().primary()));
    *active = Contexts::Get().PrimaryRetained() ? 1 : 0;
    return absl::OkStatus();
  });
}

// The scheduling flags choose how the host waits; the shim always spins, then sleeps.
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned int flags) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckDevice(device));
    return Contexts::Get().SetPrimaryFlags(flags);
  });
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice device, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(device, flags);
}

CUresult cuCtxCreate_v2(CUcontext* context, unsigned int flags, CUdevice device) {
  return DriverCall(__func__, [&] { return CreateContext(context, flags, device); });
}

CUresult cuCtxCreate(CUcontext* context, unsigned int flags, CUdevice device) {
  return cuCtxCreate_v2(context, flags, device);
}

// Execution-affinity and CIG parameters partition hardware that a shared device does not give
// one client: such a context is refused rather than created without them.
CUresult cuCtxCreate_v4(CUcontext* context, CUctxCreateParams* params, unsigned int flags,
                        CUdevice device) {
  return DriverCall(__func__, [&]() -> absl::Status {
    if (params != nullptr && (params->numExecAffinityParams != 0 || params->cigParams != nullptr)) {
      return DriverError(CUDA_ERROR_NOT_SUPPORTED, "execution-affinity and CIG contexts");
    }
    return CreateContext(context, flags, device);
  });
}

CUresult cuCtxDestroy_v2(CUcontext context) {
  return DriverCall(__func__, [&] { return DestroyContext(context); });
}

CUresult cuCtxDestroy(CUcontext context) { return cuCtxDestroy_v2(context); }

CUresult cuCtxGetCurrent(CUcontext* context) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(context));
    *context = Current();
    return absl::OkStatus();
  });
}

// A null context pops the top of the stack (CUDA Driver API, cuCtxSetCurrent).
CUresult cuCtxSetCurrent(CUcontext context) {
  return DriverCall(__func__, [&]() -> absl::Status {
    if (context == nullptr) {
      if (!stack.empty()) stack.pop_back();
      return absl::OkStatus();
    }
    TALLY_RETURN_IF_ERROR(Contexts::Get().Flags(context).status());
    if (stack.empty()) {
      stack.push_back(context);
    } else {
      stack.back() = context;
    }
    return absl::OkStatus();
  });
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  return DriverCall(__func__, [&] { return PushContext(context); });
}

CUresult cuCtxPushCurrent(CUcontext context) { return cuCtxPushCurrent_v2(context); }

CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  return DriverCall(__func__, [&] { return PopContext(context); });
}

CUresult cuCtxPopCurrent(CUcontext* context) { return cuCtxPopCurrent_v2(context); }

CUresult cuCtxSynchronize_v2(CUcontext context) {
  return DriverCall(__func__, [&] { return Synchronize(context); });
}

CUresult cuCtxSynchronize() { return cuCtxSynchronize_v2(nullptr); }

CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext context) {
  return DriverCall(__func__, [&] { return GetDevice(device, context); });
}

CUresult cuCtxGetDevice(CUdevice* device) { return cuCtxGetDevice_v2(device, nullptr); }

CUresult cuCtxGetFlags(unsigned int* flags) {
  return DriverCall(__func__, [&]() -> absl::Status {
    TALLY_RETURN_IF_ERROR(CheckOut(flags));
    TALLY_ASSIGN_OR_RETURN(*flags, Contexts::Get().Flags(Current()));
    return absl::OkStatus();
  });
}

}  // extern "C"
