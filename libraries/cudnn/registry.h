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
    if (it == Registry().objects.end()) Refuse(CUDNN_STATUS_BAD_PARAM, Object::kUnknown);
    owned = std::move(it->second);
    Registry().objects.erase(it);
  }
  // The live object at `address`; BAD_PARAM for any other address.
  static Object& Find(const void* address) {
    if (address == nullptr) {
      Refuse(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(Object::kName) + " is null");
    }
    std::lock_guard lock(Registry().mutex);
    auto it = Registry().objects.find(address);
    if (it == Registry().objects.end()) Refuse(CUDNN_STATUS_BAD_PARAM, Object::kUnknown);
    return *it->second;
  }

 private:
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
