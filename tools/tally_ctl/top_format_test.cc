// tally-ctl top's sample: rates between two statuses, new clients counted from their start, the
// sort orders, and the sort keys it accepts.
#include "tools/tally_ctl/top_format.h"

#include <catch2/catch.hpp>
#include <string>

namespace tally::tools {
namespace {

ipc::ClientStatus Client(uint64_t id, uint64_t kernels, uint64_t memory_mib) {
  ipc::ClientStatus client{};
  client.client_id = ClientId(id);
  client.pid = static_cast<int32_t>(1000 + id);
  client.client_priority.is_set = 1;
  client.kernels_original = kernels;
  client.memory_bytes = memory_mib << 20;
  ipc::CopyText("./job" + std::to_string(id), client.command, sizeof(client.command));
  return client;
}

ipc::StatusReport Report() {
  ipc::StatusReport report{};
  ipc::CopyText("Tally Emulated GPU", report.server.device_name, sizeof(report.server.device_name));
  report.server.total_memory = uint64_t{4} << 30;
  report.server.free_memory = uint64_t{3} << 30;
  return report;
}

TEST_CASE("top: each client's rates since the previous sample, sorted as asked") {
  ipc::StatusReport before = Report();
  before.clients.push_back(Client(7, 5, 256));
  ipc::StatusReport now = Report();
  ipc::ClientStatus seven = Client(7, 25, 256);
  seven.preemptions = 4;
  seven.held_ns = 1'000'000'000;
  seven.library_calls[ipc::Library::kCudnn] = 4;
  seven.vendor_library_calls[ipc::Library::kCublas] = 2;  // counted beside Tally's kernels'
  now.clients.push_back(seven);
  now.clients.push_back(Client(9, 4, 1024));  // new: counted from its start
  now.server.departed.clients = 2;

  const std::string by_kernels = FormatTop(before, now, 2.0, TopSort::kKernels);
  CHECK(by_kernels.find("Tally Emulated GPU: 3072 of 4096 MiB free, 2 client(s), 2 departed; "
                        "rates over 2.0 s\n") == 0);
  // 20 kernels, 4 preemptions and 6 library calls in 2 s, held 1 s of 2.
  CHECK(by_kernels.find("     7     1007 best-effort      256.0      10.0       2.0   50.0       "
                        "3.0  ./job7\n") != std::string::npos);
  CHECK(by_kernels.find("     9     1009 best-effort     1024.0       2.0       0.0    0.0       "
                        "0.0  ./job9\n") != std::string::npos);
  CHECK(by_kernels.find("./job7") < by_kernels.find("./job9"));
  const std::string by_memory = FormatTop(before, now, 2.0, TopSort::kMemory);
  CHECK(by_memory.find("./job9") < by_memory.find("./job7"));
  const std::string by_id = FormatTop(before, now, 2.0, TopSort::kId);
  CHECK(by_id.find("./job7") < by_id.find("./job9"));
}

TEST_CASE("top's sort keys") {
  CHECK(ParseTopSort("held") == TopSort::kHeld);
  CHECK(ParseTopSort("preemptions") == TopSort::kPreemptions);
  CHECK(ParseTopSort("pid") == std::nullopt);
}

}  // namespace
}  // namespace tally::tools
