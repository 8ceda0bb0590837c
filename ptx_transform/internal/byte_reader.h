// Bounds-checked little-endian reading of untrusted bytes (fatbins, ELF files, nv.info records).
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tally::ptx::internal {

// True when [offset, offset + length) lies inside a buffer of `size` bytes; immune to the
// overflow that `offset + length <= size` suffers with lying 64-bit sizes.
inline bool FitsIn(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

// Prefixes `status` with what was being read and where, keeping its code: the reader's callers
// know the context ("entry header"), the low-level failure knows the reason.
inline absl::Status AtOffset(const absl::Status& status, absl::string_view what, uint64_t offset) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(what, " at offset 0x", absl::Hex(offset), ": ",
                                                  status.message()));
}

// A cursor over a byte span. A read past the end returns zeros and records a sticky error that
// names the offset, so a caller decodes a whole record and checks `ok()` once instead of after
// every field; no read ever touches memory outside the span.
class ByteReader {
 public:
  // `base` is the absolute offset of data[0] in the whole input; it only appears in messages.
  explicit ByteReader(std::span<const uint8_t> data, uint64_t base = 0)
      : data_(data), base_(base) {}

  uint8_t U8() { return static_cast<uint8_t>(Load(1)); }
  uint16_t U16() { return static_cast<uint16_t>(Load(2)); }
  uint32_t U32() { return static_cast<uint32_t>(Load(4)); }
  uint64_t U64() { return Load(8); }

  // The next `n` bytes, or an empty span (and the sticky error) when fewer remain.
  std::span<const uint8_t> Bytes(uint64_t n) {
    if (!Take(n)) return {};
    return data_.subspan(pos_ - n, n);
  }
  void Skip(uint64_t n) { Take(n); }
  void Seek(uint64_t position) {
    if (position > data_.size()) {
      Fail(position - pos_);
      return;
    }
    pos_ = position;
  }

  uint64_t position() const { return pos_; }
  uint64_t absolute_position() const { return base_ + pos_; }
  uint64_t remaining() const { return data_.size() - pos_; }
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

 private:
  bool Take(uint64_t n) {
    if (!status_.ok()) return false;
    if (n > remaining()) {
      Fail(n);
      return false;
    }
    pos_ += n;
    return true;
  }
  void Fail(uint64_t wanted) {
    status_ = absl::OutOfRangeError(
        absl::StrCat("truncated: ", wanted, " bytes wanted at offset 0x", absl::Hex(base_ + pos_),
                     ", ", remaining(), " available"));
    pos_ = data_.size();
  }
  uint64_t Load(int width) {
    if (!Take(width)) return 0;
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = (value << 8) | data_[pos_ - width + i];
    return value;
  }

  std::span<const uint8_t> data_;
  uint64_t base_ = 0;
  uint64_t pos_ = 0;
  absl::Status status_;
};

}  // namespace tally::ptx::internal
