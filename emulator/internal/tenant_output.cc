#include "emulator/internal/tenant_output.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tally::emu {

void TenantOutput::Append(uint64_t tenant, Stream stream, std::string text) {
  std::lock_guard lock(mu_);
  Pending& pending = pending_[tenant];
  if (pending.bytes + text.size() > kCapacity) return;
  pending.bytes += text.size();
  pending.records.push_back({stream, std::move(text)});
}

size_t TenantOutput::Take(uint64_t tenant, Stream* stream, char* buffer, size_t capacity) {
  std::lock_guard lock(mu_);
  const auto it = pending_.find(tenant);
  if (it == pending_.end() || capacity == 0) return 0;
  Pending& pending = it->second;
  Record& oldest = pending.records.front();
  const size_t size = std::min(capacity, oldest.text.size());
  *stream = oldest.stream;
  std::memcpy(buffer, oldest.text.data(), size);
  pending.bytes -= size;
  if (size == oldest.text.size()) {
    pending.records.pop_front();
  } else {
    oldest.text.erase(0, size);
  }
  if (pending.records.empty()) pending_.erase(it);
  return size;
}

}  // namespace tally::emu
