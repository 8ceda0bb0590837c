// What the stand-ins' ABI tests share: loading a stand-in as an application's loader would (the
// shim first, as tally-run preloads it; no server: TALLY_SERVER names a socket nobody listens
// on), and its functions by name and symbol version.
#pragma once

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>

namespace tally::libraries::abi_test {

inline void* LoadStandIn(const char* shim, const char* library) {
  setenv("TALLY_SERVER", "/nonexistent/tally-abi-test.sock", 1);
  REQUIRE(dlopen(shim, RTLD_NOW | RTLD_GLOBAL) != nullptr);
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  return handle;
}

template <typename Fn>
Fn* Get(void* library, const char* name, const char* version) {
  void* symbol = dlvsym(library, name, version);
  INFO(name);
  REQUIRE(symbol != nullptr);
  return reinterpret_cast<Fn*>(symbol);
}

}  // namespace tally::libraries::abi_test
