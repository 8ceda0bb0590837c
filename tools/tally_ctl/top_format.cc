// tally-ctl top's sample (top_format.h).
#include "tools/tally_ctl/top_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "tools/tally_ctl/status_format.h"

namespace tally::tools {
namespace {

uint64_t Kernels(const ipc::ClientStatus& c) {
  return c.kernels_original + c.kernels_sliced + c.kernels_preemptible;
}
// Served by Tally's kernels and run in the vendor library alike.
uint64_t LibraryCalls(const ipc::ClientStatus& c) {
  uint64_t sum = 0;
  for (ipc::Library library : ipc::kLibraries) {
    sum += c.library_calls[library] + c.vendor_library_calls[library];
  }
  return sum;
}

// One client's row: what it holds now and its rates since the previous sample.
struct Row {
  const ipc::ClientStatus* client;
  double kernels_per_second, preemptions_per_second, library_calls_per_second;
  double held_share;  // of the interval, 0..1 (more when several streams were held at once)
};

Row RowOf(const ipc::ClientStatus& now, const ipc::ClientStatus* before, double seconds) {
  const ipc::ClientStatus zero{};
  const ipc::ClientStatus& then = before != nullptr ? *before : zero;
  const auto rate = [&](uint64_t a, uint64_t b) {
    return seconds > 0 && a >= b ? static_cast<double>(a - b) / seconds : 0.0;
  };
  return {&now, rate(Kernels(now), Kernels(then)), rate(now.preemptions, then.preemptions),
          rate(LibraryCalls(now), LibraryCalls(then)), rate(now.held_ns, then.held_ns) / 1e9};
}

void Sort(std::vector<Row>& rows, TopSort sort) {
  const auto key = [sort](const Row& row) -> double {
    switch (sort) {
      case TopSort::kId:
        return -static_cast<double>(row.client->client_id.value());
      case TopSort::kMemory:
        return static_cast<double>(row.client->memory_bytes);
      case TopSort::kKernels:
        return row.kernels_per_second;
      case TopSort::kPreemptions:
        return row.preemptions_per_second;
      case TopSort::kHeld:
        return row.held_share;
    }
    return 0;
  };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Row& a, const Row& b) { return key(a) > key(b); });
}

}  // namespace

std::optional<TopSort> ParseTopSort(std::string_view word) {
  if (word == "id") return TopSort::kId;
  if (word == "memory") return TopSort::kMemory;
  if (word == "kernels") return TopSort::kKernels;
  if (word == "preemptions") return TopSort::kPreemptions;
  if (word == "held") return TopSort::kHeld;
  return std::nullopt;
}

std::string FormatTop(const ipc::StatusReport& before, const ipc::StatusReport& now, double seconds,
                      TopSort sort) {
  std::vector<Row> rows;
  for (const ipc::ClientStatus& client : now.clients) {
    const auto previous =
        std::find_if(before.clients.begin(), before.clients.end(),
                     [&](const ipc::ClientStatus& c) { return c.client_id == client.client_id; });
    rows.push_back(RowOf(client, previous == before.clients.end() ? nullptr : &*previous, seconds));
  }
  Sort(rows, sort);
  const ipc::StatusReply& server = now.server;
  std::string out = fmt::format(
      "{}: {:.0f} of {:.0f} MiB free, {} client(s), {} departed; rates over {:.1f} s\n",
      server.device_name, server.free_memory / 1048576.0, server.total_memory / 1048576.0,
      now.clients.size(), server.departed.clients, seconds);
  out +=
      fmt::format("{:>6} {:>8} {:>11} {:>10} {:>9} {:>9} {:>6} {:>9}  {}\n", "ID", "PID",
                  "PRIORITY", "MEM MiB", "KERNEL/s", "PREEMPT/s", "HELD%", "LIBCALL/s", "COMMAND");
  for (const Row& row : rows) {
    const ipc::ClientStatus& c = *row.client;
    out += fmt::format("{:>6} {:>8} {:>11} {:>10.1f} {:>9.1f} {:>9.1f} {:>6.1f} {:>9.1f}  {}\n",
                       c.client_id, c.pid, PriorityName(c), c.memory_bytes / 1048576.0,
                       row.kernels_per_second, row.preemptions_per_second, 100 * row.held_share,
                       row.library_calls_per_second, c.command);
  }
  return out;
}

}  // namespace tally::tools
