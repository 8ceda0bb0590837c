// Formatting of the server's status report.
#include "tools/tally_ctl/status_format.h"

#include <cctype>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/client_priority.h"
#include "common/device_uuid.h"
#include "fmt/format.h"

namespace tally::tools {
namespace {

std::string_view BackendName(uint32_t backend) {
  switch (static_cast<ipc::Backend>(backend)) {
    case ipc::Backend::kEmulator:
      return "emulator";
    case ipc::Backend::kNvidiaDriver:
      return "nvidia-driver";
  }
  return "unknown";
}

std::string Mebibytes(uint64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// "yes", or why not.
std::string AcceptingText(const ipc::StatusReply& server, size_t clients) {
  if (server.draining != 0) return "no, draining (tally-ctl drain)";
  if (clients >= server.max_clients) {
    return fmt::format("no, {} clients, its maximum (--max-clients)", clients);
  }
  return fmt::format("yes ({} of at most {} clients)", clients, server.max_clients);
}

// A limit for the table: bytes, or "none".
std::string LimitText(uint64_t limit) {
  return limit == ipc::kNoLimit ? std::string("none") : std::to_string(limit);
}

// A limit in JSON: bytes, or null.
std::string LimitJson(uint64_t limit) {
  return limit == ipc::kNoLimit ? std::string("null") : std::to_string(limit);
}

// The length of the UTF-8 sequence starting at text[i], or 0 when it is not well formed
// (overlong forms, surrogates and code points past U+10FFFF included; RFC 3629).
size_t Utf8Length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t code = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    code = lead & 0x1f;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    code = lead & 0x0f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3f);
  }
  const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
  const bool surrogate = code >= 0xd800 && code <= 0xdfff;
  if (overlong || surrogate || code > 0x10ffff) return 0;
  return length;
}

// "cublas 3, cublaslt 0, cudnn 2".
std::string LibraryCallsText(const ipc::LibraryCalls& calls) {
  std::string out;
  for (const ipc::Library library : ipc::kLibraries) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", ipc::LibraryName(library),
                       calls[library]);
  }
  return out;
}

// {"cublas": 3, "cublaslt": 0, "cudnn": 2}.
std::string LibraryCallsJson(const ipc::LibraryCalls& calls) {
  std::string out;
  for (const ipc::Library library : ipc::kLibraries) {
    out += fmt::format("{}\"{}\": {}", out.empty() ? "" : ", ", ipc::LibraryName(library),
                       calls[library]);
  }
  return "{" + out + "}";
}

// Per client, the calls of each library served by Tally's kernels and run in the vendor
// library inside the server.
std::string GrantsText(const std::vector<ipc::GrantStatus>& grants) {
  if (grants.empty()) return {};
  std::string out =
      fmt::format("grants: {}\n  {:<16} {:>11} {:>14} {:>14} {:>7}  {}\n", grants.size(), "NAME",
                  "PRIORITY", "MEMORY LIMIT", "PINNED LIMIT", "CLIENTS", "SOCKET");
  for (const ipc::GrantStatus& g : grants) {
    out += fmt::format("  {:<16} {:>11} {:>14} {:>14} {:>7}  {}\n", g.name,
                       ClientPriority::Level(g.client_priority_level).ToString(),
                       LimitText(g.memory_limit), LimitText(g.pinned_limit), g.clients, g.socket);
  }
  return out;
}

std::string LibraryCallsTable(const std::vector<ipc::ClientStatus>& clients) {
  std::string out = fmt::format(
      "library calls, served by Tally's kernels / run in the vendor library:\n  {:>4}", "ID");
  for (const ipc::Library library : ipc::kLibraries) {
    std::string heading(ipc::LibraryName(library));
    for (char& c : heading) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += fmt::format(" {:>15}", heading);
  }
  out += "\n";
  for (const ipc::ClientStatus& c : clients) {
    out += fmt::format("  {:>4}", c.client_id);
    for (const ipc::Library library : ipc::kLibraries) {
      out += fmt::format(" {:>15}", fmt::format("{}/{}", c.library_calls[library],
                                                c.vendor_library_calls[library]));
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string WellFormedUtf8(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const bool ascii = static_cast<unsigned char>(text[i]) < 0x80;
    const size_t length = ascii ? 1 : Utf8Length(text, i);
    out += length == 0 ? std::string_view("\xef\xbf\xbd") : text.substr(i, length);
    i += length == 0 ? 1 : length;
  }
  return out;
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = Utf8Length(text, i);
      out += length == 0 ? std::string_view("\\ufffd") : text.substr(i, length);
      i += length == 0 ? 1 : length;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  return out + "\"";
}

std::string PriorityName(const ipc::ClientStatus& client) {
  const ipc::WireClientPriority priority = client.client_priority;
  if (priority.is_set == 0) return "unset";
  if (priority.level == ClientPriority::kHighLevel) return "high";
  if (priority.level == ClientPriority::kBestEffortLevel) return "best-effort";
  return std::to_string(priority.level);
}

namespace {

// The client's slowdown budget ("15%@p99"), "-" for none (a server that sent none).
std::string BudgetText(const ipc::ClientStatus& client) {
  const std::optional<SlowdownBudget> budget = client.slowdown_budget.ToBudget();
  return budget ? budget->ToString() : "-";
}

// The measured slowdown at the budget's percentile ("12.5%"), "-" while unmeasured.
std::string MeasuredText(const ipc::ClientStatus& client) {
  return client.measured_slowdown < 0 ? "-"
                                      : fmt::format("{:.1f}%", client.measured_slowdown * 100);
}

std::string BudgetJson(const ipc::ClientStatus& client) {
  const std::optional<SlowdownBudget> budget = client.slowdown_budget.ToBudget();
  if (!budget) return "null";
  return fmt::format(
      "{{\"text\": {}, \"slowdown\": {}, \"percentile\": {}, \"measured_slowdown\": {}}}",
      JsonString(budget->ToString()), budget->slowdown, budget->percentile,
      client.measured_slowdown < 0 ? std::string("null")
                                   : fmt::format("{}", client.measured_slowdown));
}

}  // namespace

std::string FormatCodeCacheText(const ipc::CodeCacheStatus& cache) {
  if (cache.enabled == 0) return "code cache: none\n";
  return fmt::format(
      "code cache: {} ({} entries, {} of {} bytes); since the server started: {} hits, {} "
      "misses, {} stored, {} evicted, {} corrupt; machine code: {} linked, {} loaded from the "
      "cache, {} refused by the driver, {} links failed, {} linking now\n",
      cache.dir, cache.entries, cache.bytes, cache.limit_bytes, cache.hits, cache.misses,
      cache.stored, cache.evicted, cache.corrupt, cache.machine_code.linked,
      cache.machine_code.loaded, cache.machine_code.refused, cache.machine_code.link_failed,
      cache.machine_code.filling);
}

std::string FormatCodeCacheJson(const ipc::CodeCacheStatus& cache) {
  if (cache.enabled == 0) return "null";
  return fmt::format(
      "{{\"dir\": {}, \"entries\": {}, \"bytes\": {}, \"limit_bytes\": {}, \"hits\": {}, "
      "\"misses\": {}, \"stored\": {}, \"evicted\": {}, \"corrupt\": {}, \"machine_code\": "
      "{{\"linked\": {}, \"loaded\": {}, \"refused\": {}, \"link_failed\": {}, \"filling\": {}}}}}",
      JsonString(cache.dir), cache.entries, cache.bytes, cache.limit_bytes, cache.hits,
      cache.misses, cache.stored, cache.evicted, cache.corrupt, cache.machine_code.linked,
      cache.machine_code.loaded, cache.machine_code.refused, cache.machine_code.link_failed,
      cache.machine_code.filling);
}

std::string FormatStatusText(const ipc::StatusReport& report, const std::string& socket) {
  const ipc::StatusReply& server = report.server;
  std::string out = fmt::format("tally-server pid {} on {}\n", server.server_pid, socket);
  out += fmt::format("device:  {} ({} total, {} free), device {}, {}\n", server.device_name,
                     Mebibytes(server.total_memory), Mebibytes(server.free_memory),
                     server.device_ordinal, FormatDeviceUuid(ipc::DeviceUuidOf(server)));
  out += fmt::format("accepting clients: {}; {} waiting for memory (--admission wait)\n",
                     AcceptingText(server, report.clients.size()), server.admission_waiting);
  out += fmt::format("busy: {:.3f} s with high-priority work on the device\n",
                     server.high_busy_ns / 1e9);
  out += fmt::format("backend: {} ({})\n", BackendName(server.backend),
                     server.backend_description);
  out += fmt::format(
      "isolation: {}{}\n", ipc::IsolationName(server.isolation),
      server.isolation == ipc::Isolation::kFenced
          ? fmt::format(" (unfenceable kernels: {})", ipc::UnfenceableName(server.unfenceable))
          : std::string());
  const ipc::DepartedStatus& gone = server.departed;
  out += fmt::format(
      "departed: {} client(s); their kernels: {} original, {} sliced ({} slices), {} preemptible "
      "({} preempted, {} preemptions, {} resumes), {} risky, {} unfit; their library calls "
      "served by Tally's kernels: {}; run in the vendor library: {}\n",
      gone.clients, gone.kernels_original, gone.kernels_sliced, gone.slices,
      gone.kernels_preemptible, gone.kernels_preempted, gone.preemptions, gone.resumes,
      gone.risky_launches, gone.unfit_launches, LibraryCallsText(gone.library_calls),
      LibraryCallsText(gone.vendor_library_calls));
  const ipc::ModuleStatus& modules = server.modules;
  out += fmt::format(
      "modules: {} registered; kernels: {} indexed, {} transformed ({} forms loaded); "
      "forms in the background: {} queued, {} made, {} launches waited for them\n",
      modules.modules_registered, modules.kernels_indexed, modules.kernels_transformed,
      modules.forms_loaded, modules.forms_queued, modules.forms_made, modules.forms_waited);
  out += FormatCodeCacheText(server.code_cache);
  out += GrantsText(report.grants);
  out += fmt::format("clients: {}\n", report.clients.size());
  if (report.clients.empty()) return out;
  out += fmt::format("  {:>4} {:>8} {:>11} {:>12} {:>7}  {}\n", "ID", "PID", "PRIORITY", "MEMORY",
                     "QUEUED", "COMMAND");
  for (const ipc::ClientStatus& client : report.clients) {
    out += fmt::format("  {:>4} {:>8} {:>11} {:>12} {:>7}  {}{}\n", client.client_id, client.pid,
                       PriorityName(client), Mebibytes(client.memory_bytes), client.queued_commands,
                       client.command,
                       client.grant[0] != '\0' ? fmt::format(" [grant {}]", client.grant) : "");
  }
  // Exactly, in bytes: what each client holds against its limits.
  out += "resources:\n";
  out += fmt::format("  {:>4} {:>14} {:>14} {:>12} {:>14} {:>7} {:>7} {:>7}\n", "ID",
                     "MEMORY BYTES", "MEMORY LIMIT", "PINNED BYTES", "PINNED LIMIT", "STREAMS",
                     "EVENTS", "MODULES");
  for (const ipc::ClientStatus& c : report.clients) {
    out += fmt::format("  {:>4} {:>14} {:>14} {:>12} {:>14} {:>7} {:>7} {:>7}\n", c.client_id,
                       c.memory_bytes, LimitText(c.memory_limit), c.pinned_bytes,
                       LimitText(c.pinned_limit), c.streams, c.events, c.modules);
  }
  out += "scheduling:\n";
  out += fmt::format("  {:>4} {:>9} {:>14} {:>15} {:>11} {:>7} {:>5} {:>5} {:>10} {:>17}\n",
                     "ID", "ORIGINAL", "SLICED(SLICES)", "PTB(PREEMPTED)", "PREEMPTIONS",
                     "RESUMES", "RISKY", "UNFIT", "HELD", "PREEMPT MEAN/MAX");
  for (const ipc::ClientStatus& c : report.clients) {
    const double mean_ms = c.preemption_latencies == 0
                               ? 0
                               : c.preemption_latency_ns_total / 1e6 / c.preemption_latencies;
    out += fmt::format("  {:>4} {:>9} {:>14} {:>15} {:>11} {:>7} {:>5} {:>5} {:>10} {:>17}\n",
                       c.client_id, c.kernels_original,
                       fmt::format("{}({})", c.kernels_sliced, c.slices),
                       fmt::format("{}({})", c.kernels_preemptible, c.kernels_preempted),
                       c.preemptions, c.resumes, c.risky_launches, c.unfit_launches,
                       fmt::format("{:.3f} ms", c.held_ns / 1e6),
                       c.preemption_latencies == 0
                           ? std::string("-")
                           : fmt::format("{:.3f}/{:.3f} ms", mean_ms,
                                         c.preemption_latency_ns_max / 1e6));
  }
  out += LibraryCallsTable(report.clients);
  // Used by --policy priority-budget; MEASURED is its latest slowdown at the budget's percentile.
  out += fmt::format("budgets:\n  {:>4} {:>14} {:>9}\n", "ID", "BUDGET", "MEASURED");
  for (const ipc::ClientStatus& c : report.clients) {
    out += fmt::format("  {:>4} {:>14} {:>9}\n", c.client_id, BudgetText(c), MeasuredText(c));
  }
  if (server.isolation == ipc::Isolation::kNone) return out;
  out += fmt::format("isolation:\n  {:>4} {:>16} {:>14} {:>16} {:>14}\n", "ID", "UNFENCED REFUSED",
                     "UNFENCED ALONE", "UNFENCED WAITING", "FENCE VIOLATED");
  for (const ipc::ClientStatus& c : report.clients) {
    out += fmt::format("  {:>4} {:>16} {:>14} {:>16} {:>14}\n", c.client_id, c.unfenced_refused,
                       c.unfenced_alone, c.unfenced_waiting, c.fence_violated != 0 ? "yes" : "no");
  }
  return out;
}

std::string FormatStatusJson(const ipc::StatusReport& report, const std::string& socket) {
  const ipc::StatusReply& server = report.server;
  std::string out = "{\n";
  out += fmt::format("  \"socket\": {},\n", JsonString(socket));
  out += fmt::format("  \"server_pid\": {},\n", server.server_pid);
  out += fmt::format(
      "  \"device\": {{\"name\": {}, \"ordinal\": {}, \"uuid\": {}, \"total_memory_bytes\": {}, "
      "\"free_memory_bytes\": {}, \"context_faults\": {}, \"busy_ns\": {{\"high\": {}}}}},\n",
      JsonString(server.device_name), server.device_ordinal,
      JsonString(FormatDeviceUuid(ipc::DeviceUuidOf(server))), server.total_memory,
      server.free_memory, server.context_faults, server.high_busy_ns);
  out += fmt::format("  \"max_clients\": {},\n  \"draining\": {},\n  \"admission_waiting\": {},\n",
                     server.max_clients, server.draining != 0, server.admission_waiting);
  out += fmt::format("  \"backend\": {{\"kind\": {}, \"description\": {}}},\n",
                     JsonString(BackendName(server.backend)),
                     JsonString(server.backend_description));
  out += fmt::format("  \"isolation\": {},\n", JsonString(ipc::IsolationName(server.isolation)));
  out += fmt::format("  \"unfenceable\": {},\n",
                     server.isolation == ipc::Isolation::kFenced
                         ? JsonString(ipc::UnfenceableName(server.unfenceable))
                         : std::string("null"));
  const ipc::DepartedStatus& gone = server.departed;
  out += fmt::format(
      "  \"departed\": {{\"clients\": {}, \"scheduling\": {{\"kernels_original\": {}, "
      "\"kernels_sliced\": {}, \"slices\": {}, \"kernels_preemptible\": {}, "
      "\"kernels_preempted\": {}, \"preemptions\": {}, \"resumes\": {}, "
      "\"risky_launches\": {}, \"unfit_launches\": {}}}, \"library_calls\": {}, "
      "\"vendor_library_calls\": {}, \"faulted_clients\": {}}},\n",
      gone.clients, gone.kernels_original, gone.kernels_sliced, gone.slices,
      gone.kernels_preemptible, gone.kernels_preempted, gone.preemptions, gone.resumes,
      gone.risky_launches, gone.unfit_launches, LibraryCallsJson(gone.library_calls),
      LibraryCallsJson(gone.vendor_library_calls), gone.faulted_clients);
  const ipc::ModuleStatus& modules = server.modules;
  out += fmt::format(
      "  \"modules\": {{\"registered\": {}, \"kernels_indexed\": {}, "
      "\"kernels_transformed\": {}, \"forms_loaded\": {}, \"forms_queued\": {}, "
      "\"forms_made\": {}, \"forms_waited\": {}}},\n",
      modules.modules_registered, modules.kernels_indexed, modules.kernels_transformed,
      modules.forms_loaded, modules.forms_queued, modules.forms_made, modules.forms_waited);
  out += fmt::format("  \"code_cache\": {},\n", FormatCodeCacheJson(server.code_cache));
  out += "  \"clients\": [";
  for (size_t i = 0; i < report.clients.size(); ++i) {
    const ipc::ClientStatus& c = report.clients[i];
    out += fmt::format(
        "{}\n    {{\"id\": {}, \"pid\": {}, \"command\": {}, \"priority\": {}, "
        "\"priority_set\": {}, \"memory_bytes\": {}, \"allocations\": {}, "
        "\"memory_limit_bytes\": {}, \"pinned_bytes\": {}, \"pinned_limit_bytes\": {}, "
        "\"streams\": {}, \"events\": {}, \"modules\": {}, "
        "\"queued_commands\": {}, \"scheduling\": {{\"kernels_original\": {}, "
        "\"kernels_sliced\": {}, \"slices\": {}, \"kernels_preemptible\": {}, "
        "\"kernels_preempted\": {}, \"preemptions\": {}, \"resumes\": {}, "
        "\"risky_launches\": {}, \"unfit_launches\": {}, \"held_ns\": {}, "
        "\"preemption_latencies\": {}, "
        "\"preemption_latency_ns_total\": {}, \"preemption_latency_ns_max\": {}}}, "
        "\"library_calls\": {}, \"vendor_library_calls\": {}, \"unfenced_refused\": {}, "
        "\"unfenced_alone\": {}, \"unfenced_waiting\": {}, \"fence_violated\": {}, "
        "\"sticky_error\": {}, \"grant\": {}, "
        "\"slowdown_budget\": {}}}",
        i == 0 ? "" : ",", c.client_id, c.pid, JsonString(c.command), c.client_priority.level,
        c.client_priority.is_set != 0, c.memory_bytes, c.allocations, LimitJson(c.memory_limit),
        c.pinned_bytes, LimitJson(c.pinned_limit), c.streams, c.events, c.modules,
        c.queued_commands, c.kernels_original, c.kernels_sliced, c.slices, c.kernels_preemptible,
        c.kernels_preempted, c.preemptions, c.resumes, c.risky_launches, c.unfit_launches,
        c.held_ns, c.preemption_latencies, c.preemption_latency_ns_total,
        c.preemption_latency_ns_max, LibraryCallsJson(c.library_calls),
        LibraryCallsJson(c.vendor_library_calls), c.unfenced_refused, c.unfenced_alone,
        c.unfenced_waiting, c.fence_violated != 0, c.sticky_error,
        c.grant[0] != '\0' ? JsonString(c.grant) : std::string("null"), BudgetJson(c));
  }
  out += report.clients.empty() ? "],\n" : "\n  ],\n";
  out += "  \"grants\": [";
  for (size_t i = 0; i < report.grants.size(); ++i) {
    out += fmt::format("{}\n    {}", i == 0 ? "" : ",", FormatGrantJson(report.grants[i]));
  }
  out += report.grants.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string FormatGrantJson(const ipc::GrantStatus& grant) {
  return fmt::format(
      "{{\"name\": {}, \"socket\": {}, \"priority\": {}, \"memory_limit_bytes\": {}, "
      "\"pinned_limit_bytes\": {}, \"clients\": {}}}",
      JsonString(grant.name), JsonString(grant.socket), grant.client_priority_level,
      LimitJson(grant.memory_limit), LimitJson(grant.pinned_limit), grant.clients);
}

std::string FormatAllStatusText(const std::vector<SocketStatus>& servers) {
  std::string out;
  for (const SocketStatus& server : servers) {
    if (!out.empty()) out += "\n";
    out += server.report.ok() ? FormatStatusText(*server.report, server.socket)
                              : fmt::format("{}: not running ({})\n", server.socket,
                                            std::string(server.report.status().message()));
  }
  return out;
}

std::string FormatAllStatusJson(const std::vector<SocketStatus>& servers) {
  std::string out = "[";
  for (const SocketStatus& server : servers) {
    out += out.size() > 1 ? ",\n" : "\n";
    if (server.report.ok()) {
      std::string object = FormatStatusJson(*server.report, server.socket);
      object.pop_back();  // its newline: the array's comma comes first
      out += object;
    } else {
      out += fmt::format("{{\"socket\": {}, \"running\": false, \"error\": {}}}",
                         JsonString(server.socket),
                         JsonString(std::string(server.report.status().message())));
    }
  }
  return out + "\n]\n";
}

}  // namespace tally::tools
