// The content hash that names a fatbin on the wire (RegisterFatbinRequest::content_hash):
// 64-bit FNV-1a. Not cryptographic: the server recomputes it and compares the bytes of equal
// hashes before sharing a module, so it only has to spread well.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace tally::ipc {

inline constexpr uint64_t kContentHashBasis = 0xcbf29ce484222325ull;  // FNV offset basis

// `hash` continues a hash of preceding bytes: ContentHash(b, ContentHash(a)) hashes a then b.
inline uint64_t ContentHash(std::span<const std::byte> bytes, uint64_t hash = kContentHashBasis) {
  for (std::byte b : bytes) hash = (hash ^ static_cast<uint64_t>(b)) * 0x100000001b3ull;
  return hash;
}

}  // namespace tally::ipc
