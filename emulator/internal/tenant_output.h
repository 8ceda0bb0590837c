// What tenants' kernels print (device printf, the text of a failed assert), kept per tenant until
// the server takes it for its client (tallyEmuTenantTakeOutput), instead of going to the
// server's own stdout: each client sees its own kernels' output, as with a private GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace tally::emu {

class TenantOutput {
 public:
  enum class Stream : int { kStdout = 1, kStderr = 2 };
  // What a tenant's pending text may hold, as CUDA's printf FIFO (CU_LIMIT_PRINTF_FIFO_SIZE's
  // default): text beyond it is dropped, as a full FIFO drops it.
  static constexpr size_t kCapacity = size_t{1} << 20;

  void Append(uint64_t tenant, Stream stream, std::string text);
  // Moves up to `capacity` bytes of the tenant's oldest pending text into `buffer` (a record
  // longer than that is taken in pieces); 0 when nothing is pending. `stream` says where it goes.
  size_t Take(uint64_t tenant, Stream* stream, char* buffer, size_t capacity);

 private:
  struct Record {
    Stream stream;
    std::string text;
  };
  struct Pending {
    std::deque<Record> records;
    size_t bytes = 0;
  };
  std::mutex mu_;
  absl::flat_hash_map<uint64_t, Pending> pending_;  // mu_; only tenants with text pending
};

}  // namespace tally::emu
