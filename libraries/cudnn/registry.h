// The live objects of one kind (handles, each kind of descriptor): created here, found by the
// address the application holds, never dereferenced before they are found, so that a null,
// foreign or destroyed one is refused instead of read.
#pragma once

#include <cudnn.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "libraries/cudnn/status.h"

namespace tally::libraries::cudnn {

template <typename Object>
class Live {
 public:
  // A new object with its defaults, registered; its address goes to *out.
  template <typename Handle>
  static void Create(Handle* out) {
    RequireNotNull(out, "the result pointer");
    auto object = std::make_unique<Object>();
    std::lock_guard lock(Registry().mutex);
    *out = reinterpret_cast<Handle>(object.get());
    Registry().objects.emplace(object.get(), std::move(object));
  }
  static void Destroy(const void* address) {
    std::unique_ptr<Object> owned;  // freed outside the lock
    std::lock_guard lock(Registry().mutex);
    auto it = Registry().objects.find(address);
    if (it == Registry().objects.end()) RefuseUnknown();
    owned = std::move(it->second);
    Registry().objects.erase(it);
  }
  // The entry points cudnnCreate...Descriptor and cudnnDestroy...Descriptor (destroying null
  // does nothing, as free()).
  template <typename Handle>
  static cudnnStatus_t CreateEntry(const char* api, Handle* out) noexcept {
    return CudnnCall(api, [&] { Create(out); });
  }
  static cudnnStatus_t DestroyEntry(const char* api, const void* address) noexcept {
    if (address == nullptr) return CUDNN_STATUS_SUCCESS;
    return CudnnCall(api, [&] { Destroy(address); });
  }
  // The live object at `address`; BAD_PARAM for any other address.
  static Object& Find(const void* address) {
    if (address == nullptr) {
      Refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(Object::kName) + " is null");
    }
    std::lock_guard lock(Registry().mutex);
    auto it = Registry().objects.find(address);
    if (it == Registry().objects.end()) RefuseUnknown();
    return *it->second;
  }
  // The live object at `address`, set by the application (BAD_PARAM_NOT_FINALIZED before).
  static Object& FindSet(const void* address) {
    Object& object = Find(address);
    if (!object.set) {
      Refuse(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, std::string(Object::kName) + " was never set");
    }
    return object;
  }

 private:
  [[noreturn]] static void RefuseUnknown() {
    Refuse(CUDNN_STATUS_BAD_PARAM, std::string(Object::kName) + " is not a live one");
  }
  struct Objects {
    std::mutex mutex;
    std::unordered_map<const void*, std::unique_ptr<Object>> objects;
  };
  static Objects& Registry() {
    static auto* objects = new Objects;  // never destroyed: calls may come from exit handlers
    return *objects;
  }
};

}  // namespace tally::libraries::cudnn
