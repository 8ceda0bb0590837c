// Device output on a driver that prints it to the server's own stdout (NVIDIA's: one context for
// every client): the server's PTX rewrite (ptx_transform/device_output.h) makes kernels write
// what printf and a failed assert print into a ring of the client's own, which the server reads
// at the client's synchronising calls (server/device_output_ring.h). The layout both sides keep:
//
// - The module variable kDeviceOutputVariable, three u64s the server sets when it gives a client
//   the module: the control block's device address, the ring's device address, its capacity.
// - The control block (device memory): the head, bytes ever reserved (writers advance it with
//   atom.cas; a record that does not fit is not written).
// - The ring (page-locked host memory mapped for the device): the tail at offset 0 (bytes ever
//   consumed; the server advances it after zeroing what it consumed), the data from
//   kRingDataOffset, `capacity` bytes (a power of two), addressed modulo the capacity.
// - A record: a header word written last (after membar.sys) holding kRecordMagic, the stream
//   (1 stdout, 2 stderr) and the record's size in bytes (a multiple of 8, header included); then
//   the format string with its NUL, zero-padded to 8 bytes; then each argument the format takes
//   (cuda_abi/device_printf.h) in order: a scalar as one 8-byte word, zero-extended; a `%s` string
//   as its bytes and NUL, zero-padded to 8 bytes ("(null)" for a null pointer).
#pragma once

#include <cstdint>

namespace tally {

inline constexpr char kDeviceOutputVariable[] = "__tally_device_output";

inline constexpr uint64_t kRingDataOffset = 64;
inline constexpr uint64_t kRecordMagic = 0x7a11ull << 48;
inline constexpr uint64_t kRecordMagicMask = 0xffffull << 48;

inline constexpr uint64_t RecordHeader(uint32_t stream, uint32_t size) {
  return kRecordMagic | (uint64_t{stream} << 32) | size;
}
inline constexpr uint32_t RecordStream(uint64_t header) {
  return static_cast<uint32_t>(header >> 32) & 0xffff;
}
inline constexpr uint32_t RecordSize(uint64_t header) { return static_cast<uint32_t>(header); }

}  // namespace tally
