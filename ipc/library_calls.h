// The libraries whose calls Tally serves in its own kernels (the stand-ins of libraries/), and
// how many of their calls ran so, as tally-ctl status reports them per client. A call is
// counted by its first kernel launch, which carries the library (LaunchKernelRequest::
// library_call): counting costs no message of its own. Calls run in a vendor library inside the
// server (not built yet) would be counted beside these, in a LibraryCalls of their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <type_traits>

namespace tally::ipc {

// uint32_t on the wire; the shim's C entry point tally_library_call_begin takes it as int.
enum class Library : uint32_t {
  kNone = 0,  // a launch that begins no library call
  kCublas = 1,
  kCublasLt = 2,
  kCudnn = 3,
};

inline constexpr Library kLibraries[] = {Library::kCublas, Library::kCublasLt, Library::kCudnn};
inline constexpr size_t kLibraryCount = std::size(kLibraries);

// The library a value from the wire names, kNone included; nullopt for a value no library has.
constexpr std::optional<Library> LibraryFromWire(uint32_t value) {
  if (value > kLibraryCount) return std::nullopt;
  return static_cast<Library>(value);
}

// As tally-ctl prints it and its JSON keys it.
constexpr std::string_view LibraryName(Library library) {
  switch (library) {
    case Library::kNone:
      return "none";
    case Library::kCublas:
      return "cublas";
    case Library::kCublasLt:
      return "cublaslt";
    case Library::kCudnn:
      return "cudnn";
  }
  return "unknown";
}

// A library's place among kLibraries; `library` is not kNone.
constexpr size_t LibrarySlot(Library library) { return static_cast<size_t>(library) - 1; }

// Calls per library (ClientStatus, DepartedStatus).
struct LibraryCalls {
  uint64_t counts[kLibraryCount];

  uint64_t& operator[](Library library) { return counts[LibrarySlot(library)]; }
  uint64_t operator[](Library library) const { return counts[LibrarySlot(library)]; }
  LibraryCalls& operator+=(const LibraryCalls& other) {
    for (size_t i = 0; i < kLibraryCount; ++i) counts[i] += other.counts[i];
    return *this;
  }
};

static_assert(std::is_trivially_copyable_v<LibraryCalls> &&
              std::is_standard_layout_v<LibraryCalls>);
static_assert([] {
  for (size_t i = 0; i < kLibraryCount; ++i) {
    if (LibrarySlot(kLibraries[i]) != i) return false;
  }
  return true;
}());

}  // namespace tally::ipc
