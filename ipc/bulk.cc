// Bulk-data area: bounds-checked resolution and the client's Boost.Interprocess allocator.
#include "ipc/bulk.h"

#include <boost/interprocess/creation_tags.hpp>
#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/managed_external_buffer.hpp>
#include <mutex>
#include <new>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tally::ipc {

absl::StatusOr<std::span<std::byte>> BulkArea::Resolve(const BulkRef& ref) const {
  // Written so that no sum can overflow, whatever the peer put in `ref`.
  if (ref.offset > area_.size() || ref.size > area_.size() - ref.offset) {
    return absl::OutOfRangeError(
        absl::StrFormat("bulk block [%d, +%d) is outside the %d-byte bulk area", ref.offset,
                        ref.size, area_.size()));
  }
  return area_.subspan(ref.offset, ref.size);
}

struct BulkAllocator::Impl {
  std::span<std::byte> area;
  // managed_external_buffer's allocator has no lock of its own (null_mutex_family): the shim's
  // host threads allocate and free concurrently, so every use of `buffer` holds `mutex`.
  mutable std::mutex mutex;
  boost::interprocess::managed_external_buffer buffer;
};

BulkAllocator::BulkAllocator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BulkAllocator::~BulkAllocator() = default;

absl::StatusOr<std::unique_ptr<BulkAllocator>> BulkAllocator::Create(std::span<std::byte> area) {
  auto impl = std::make_unique<Impl>();
  impl->area = area;
  try {
    impl->buffer = boost::interprocess::managed_external_buffer(boost::interprocess::create_only,
                                                                area.data(), area.size());
  } catch (const boost::interprocess::interprocess_exception& e) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot format a %d-byte bulk area: %s", area.size(), e.what()));
  }
  return std::unique_ptr<BulkAllocator>(new BulkAllocator(std::move(impl)));
}

absl::StatusOr<BulkRef> BulkAllocator::Allocate(size_t size, size_t alignment) {
  std::unique_lock lock(impl_->mutex);
  void* block = alignment == 0 ? impl_->buffer.allocate(size, std::nothrow)
                               : impl_->buffer.allocate_aligned(size, alignment, std::nothrow);
  if (block == nullptr) {
    const size_t free = impl_->buffer.get_free_memory();
    return absl::ResourceExhaustedError(absl::StrFormat(
        "bulk area has no free block of %d bytes (%d of %d bytes free)", size, free,
        impl_->area.size()));
  }
  const auto offset = static_cast<uint64_t>(static_cast<std::byte*>(block) - impl_->area.data());
  return BulkRef{offset, size};
}

void BulkAllocator::Free(const BulkRef& ref) {
  std::lock_guard lock(impl_->mutex);
  impl_->buffer.deallocate(impl_->area.data() + ref.offset);
}

std::span<std::byte> BulkAllocator::Bytes(const BulkRef& ref) const {
  TALLY_CHECK(ref.offset <= impl_->area.size() && ref.size <= impl_->area.size() - ref.offset);
  return impl_->area.subspan(ref.offset, ref.size);
}

size_t BulkAllocator::free_bytes() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->buffer.get_free_memory();
}

}  // namespace tally::ipc
