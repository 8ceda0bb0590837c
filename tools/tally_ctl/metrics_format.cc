// Servers' status as Prometheus metrics (metrics_format.h).
#include "tools/tally_ctl/metrics_format.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "tools/tally_ctl/status_format.h"

namespace tally::tools {
namespace {

using Client = ipc::ClientStatus;
using Departed = ipc::DepartedStatus;

// One sample: its labels (`name="value"` pairs, comma-separated) and value.
struct Sample {
  std::string labels;
  std::string value;
};
using Samples = std::vector<Sample>;

void Family(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            const Samples& samples) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  for (const Sample& sample : samples) {
    if (sample.labels.empty()) {
      out += fmt::format("{} {}\n", name, sample.value);
    } else {
      out += fmt::format("{}{{{}}} {}\n", name, sample.labels, sample.value);
    }
  }
}

std::string Join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "," + b;
}

// A server that answered, with its label (server="SOCKET") and the labels its clients get
// besides their id.
struct Answered {
  std::string label;
  const ipc::StatusReport* report;
  const ClientLabels* client_labels;  // none where empty
};

std::string ClientLabel(const Answered& server, const Client& client) {
  const std::string id = Join(server.label, fmt::format("client=\"{}\"", client.client_id));
  if (!*server.client_labels) return id;
  return Join(id, (*server.client_labels)(*server.report, client));
}
std::string DepartedLabel(const Answered& server) {
  return Join(server.label, "client=\"departed\"");
}

std::string Seconds(uint64_t nanoseconds) { return fmt::format("{:.9g}", nanoseconds / 1e9); }

// A counter the server keeps per client and sums over the clients that have left; `label`
// (`form="sliced"`, or empty) tells the series of one family apart.
struct CounterSeries {
  const char* label;
  uint64_t Client::*client;
  uint64_t Departed::*departed;
};
struct CounterFamily {
  const char* name;
  const char* help;
  std::vector<CounterSeries> series;
};

const std::vector<CounterFamily>& Counters() {
  static const auto* families = new std::vector<CounterFamily>{
      {"tally_kernels_total",
       "Kernels issued to the device, by the form they ran in.",
       {{"form=\"original\"", &Client::kernels_original, &Departed::kernels_original},
        {"form=\"sliced\"", &Client::kernels_sliced, &Departed::kernels_sliced},
        {"form=\"preemptible\"", &Client::kernels_preemptible, &Departed::kernels_preemptible}}},
      {"tally_kernel_slices_total",
       "Slices the sliced kernels were issued in.",
       {{"", &Client::slices, &Departed::slices}}},
      {"tally_kernels_preempted_total",
       "Preemptible kernels preempted at least once.",
       {{"", &Client::kernels_preempted, &Departed::kernels_preempted}}},
      {"tally_preemptions_total",
       "Preemptions of the client's kernels.",
       {{"", &Client::preemptions, &Departed::preemptions}}},
      {"tally_resumes_total",
       "Resumptions of preempted kernels.",
       {{"", &Client::resumes, &Departed::resumes}}},
      {"tally_risky_launches_total",
       "Background kernels run untransformed beside more important work.",
       {{"", &Client::risky_launches, &Departed::risky_launches}}},
      {"tally_unfit_launches_total",
       "Kernels run in their original form because no transformed form fits the launch.",
       {{"", &Client::unfit_launches, &Departed::unfit_launches}}},
  };
  return *families;
}

void CounterFamilies(std::string& out, const std::vector<Answered>& servers) {
  for (const CounterFamily& family : Counters()) {
    Samples samples;
    for (const Answered& server : servers) {
      for (const Client& client : server.report->clients) {
        for (const CounterSeries& series : family.series) {
          samples.push_back({Join(ClientLabel(server, client), series.label),
                             std::to_string(client.*series.client)});
        }
      }
      for (const CounterSeries& series : family.series) {
        samples.push_back({Join(DepartedLabel(server), series.label),
                           std::to_string(server.report->server.departed.*series.departed)});
      }
    }
    Family(out, family.name, "counter", family.help, samples);
  }
  Samples calls;
  // ran_in="tally": served by Tally's kernels; "vendor": run in the vendor library.
  auto add_calls = [&](const std::string& labels, const ipc::LibraryCalls& own,
                       const ipc::LibraryCalls& vendor) {
    for (ipc::Library library : ipc::kLibraries) {
      for (const auto& [ran_in, counts] : {std::pair{"tally", &own}, {"vendor", &vendor}}) {
        calls.push_back({Join(labels, fmt::format("library=\"{}\",ran_in=\"{}\"",
                                                  ipc::LibraryName(library), ran_in)),
                         std::to_string((*counts)[library])});
      }
    }
  };
  for (const Answered& server : servers) {
    for (const Client& client : server.report->clients) {
      add_calls(ClientLabel(server, client), client.library_calls, client.vendor_library_calls);
    }
    const ipc::DepartedStatus& departed = server.report->server.departed;
    add_calls(DepartedLabel(server), departed.library_calls, departed.vendor_library_calls);
  }
  Family(out, "tally_library_calls_total", "counter",
         "Calls of cuBLAS, cuBLASLt and cuDNN: ran_in=\"tally\" served by Tally's own kernels "
         "(counted at their first kernel launch), ran_in=\"vendor\" run in the vendor library "
         "inside the server (counted when queued).",
         calls);
}

// A value of every connected client of every server that answered (`value` returns nothing for
// a client without one).
template <typename Value>
Samples PerClient(const std::vector<Answered>& servers, Value value) {
  Samples samples;
  for (const Answered& server : servers) {
    for (const Client& client : server.report->clients) {
      if (std::optional<std::string> v = value(client)) {
        samples.push_back({ClientLabel(server, client), *v});
      }
    }
  }
  return samples;
}
Samples Field(const std::vector<Answered>& servers, uint64_t Client::*field) {
  return PerClient(servers, [&](const Client& c) -> std::optional<std::string> {
    return std::to_string(c.*field);
  });
}
Samples Limit(const std::vector<Answered>& servers, uint64_t Client::*field) {
  return PerClient(servers, [&](const Client& c) -> std::optional<std::string> {
    if (c.*field == ipc::kNoLimit) return std::nullopt;
    return std::to_string(c.*field);
  });
}
Samples Duration(const std::vector<Answered>& servers, uint64_t Client::*field) {
  return PerClient(
      servers, [&](const Client& c) -> std::optional<std::string> { return Seconds(c.*field); });
}

// A value of every server that answered.
template <typename Value>
Samples PerServer(const std::vector<Answered>& servers, Value value) {
  Samples samples;
  for (const Answered& server : servers) samples.push_back({server.label, value(*server.report)});
  return samples;
}

void ServerFamilies(std::string& out, const std::vector<ServerStatus>& all,
                    const std::vector<Answered>& servers) {
  Samples up;
  for (const ServerStatus& server : all) {
    up.push_back({"server=" + LabelValue(server.socket), server.report ? "1" : "0"});
  }
  Family(out, "tally_server_up", "gauge", "Whether the server answered.", up);
  Samples info;
  for (const Answered& server : servers) {
    const ipc::StatusReply& reply = server.report->server;
    const bool emulated = reply.backend == static_cast<uint32_t>(ipc::Backend::kEmulator);
    info.push_back(
        {Join(server.label,
              fmt::format("backend=\"{}\",device={},device_ordinal=\"{}\",device_uuid=\"{}\"",
                          emulated ? "emulator" : "nvidia-driver", LabelValue(reply.device_name),
                          reply.device_ordinal, FormatDeviceUuid(ipc::DeviceUuidOf(reply)))),
         "1"});
  }
  Family(out, "tally_server_info", "gauge", "The server's device and backend.", info);
  Family(out, "tally_device_memory_bytes", "gauge", "Memory of the device.",
         PerServer(servers, [](const ipc::StatusReport& r) {
           return std::to_string(r.server.total_memory);
         }));
  Family(out, "tally_device_memory_free_bytes", "gauge",
         "Free memory of the device (cuMemGetInfo).",
         PerServer(servers, [](const auto& r) { return std::to_string(r.server.free_memory); }));
  Family(out, "tally_clients", "gauge", "Clients connected.",
         PerServer(servers, [](const auto& r) { return std::to_string(r.clients.size()); }));
  Family(
      out, "tally_departed_clients_total", "counter", "Clients that have left the server.",
      PerServer(servers, [](const auto& r) { return std::to_string(r.server.departed.clients); }));
  Family(out, "tally_departed_faulted_clients_total", "counter",
         "Clients that have left the server with a sticky error (a fault).",
         PerServer(servers, [](const auto& r) {
           return std::to_string(r.server.departed.faulted_clients);
         }));
  Family(out, "tally_device_context_faults_total", "counter",
         "Faults of the device context all clients share, each recovered from by a reset.",
         PerServer(servers, [](const auto& r) { return std::to_string(r.server.context_faults); }));
  Samples busy;
  for (const Answered& server : servers) {
    busy.push_back(
        {Join(server.label, "level=\"high\""), Seconds(server.report->server.high_busy_ns)});
  }
  Family(out, "tally_device_busy_seconds_total", "counter",
         "Time during which work of a client above best-effort was on the device.", busy);
}

// The per-client families that are one field of ClientStatus each.
enum class Render : uint8_t { kCount, kLimit, kSeconds };  // limits: absent where there is none
struct ClientFamily {
  const char* name;
  const char* type;
  const char* help;
  Render render;
  uint64_t Client::*field;
};
constexpr ClientFamily kClientFamilies[] = {
    {"tally_client_memory_bytes", "gauge", "Device memory the client holds.", Render::kCount,
     &Client::memory_bytes},
    {"tally_client_memory_limit_bytes", "gauge",
     "The client's device-memory limit, where it has one.", Render::kLimit, &Client::memory_limit},
    {"tally_client_allocations", "gauge", "Device allocations the client holds.", Render::kCount,
     &Client::allocations},
    {"tally_client_pinned_bytes", "gauge", "Page-locked host memory registered for the client.",
     Render::kCount, &Client::pinned_bytes},
    {"tally_client_pinned_limit_bytes", "gauge",
     "The client's page-locked memory limit, where it has one.", Render::kLimit,
     &Client::pinned_limit},
    {"tally_client_streams", "gauge", "Streams of the client besides its default.", Render::kCount,
     &Client::streams},
    {"tally_client_events", "gauge", "Events of the client.", Render::kCount, &Client::events},
    {"tally_client_modules", "gauge", "Modules the client loaded.", Render::kCount,
     &Client::modules},
    {"tally_client_queued_commands", "gauge",
     "Stream work accepted from the client but not yet issued to the device.", Render::kCount,
     &Client::queued_commands},
    {"tally_client_held_seconds_total", "counter",
     "Time the client's kernels were held back for more important work.", Render::kSeconds,
     &Client::held_ns},
    {"tally_client_preemption_latency_seconds_total", "counter",
     "Measured preemption latencies (flag raised to kernel end, on the device), summed.",
     Render::kSeconds, &Client::preemption_latency_ns_total},
    {"tally_client_preemptions_measured_total", "counter",
     "Preemptions whose latency was measured.", Render::kCount, &Client::preemption_latencies},
    {"tally_client_preemption_latency_max_seconds", "gauge",
     "The longest measured preemption latency.", Render::kSeconds,
     &Client::preemption_latency_ns_max},
};

void ClientFamilies(std::string& out, const std::vector<Answered>& servers) {
  Samples info;
  for (const Answered& server : servers) {
    for (const Client& client : server.report->clients) {
      info.push_back({Join(ClientLabel(server, client),
                           fmt::format("pid=\"{}\",priority={},command={},grant={}", client.pid,
                                       LabelValue(PriorityName(client)), LabelValue(client.command),
                                       LabelValue(client.grant))),
                      "1"});
    }
  }
  Family(out, "tally_client_info", "gauge",
         "A connected client: its pid, priority, command and grant (empty: none).", info);
  Family(out, "tally_client_faulted", "gauge",
         "1 once the client has a sticky error (a fault of its kernels, of its fence or of the "
         "shared context): its later calls fail.",
         PerClient(servers, [](const Client& c) -> std::optional<std::string> {
           return c.sticky_error != 0 ? "1" : "0";
         }));
  Family(out, "tally_client_priority_level", "gauge",
         "The client's priority level; higher is more important (best-effort 0, high 1).",
         PerClient(servers, [](const Client& c) -> std::optional<std::string> {
           return std::to_string(c.client_priority.level);
         }));
  for (const ClientFamily& family : kClientFamilies) {
    Samples samples;
    switch (family.render) {
      case Render::kCount:
        samples = Field(servers, family.field);
        break;
      case Render::kLimit:
        samples = Limit(servers, family.field);
        break;
      case Render::kSeconds:
        samples = Duration(servers, family.field);
        break;
    }
    Family(out, family.name, family.type, family.help, samples);
  }
}

// The server's latency histograms per priority class (ipc/latency_histograms.h), as Prometheus
// histograms: cumulative buckets whose `le` is in seconds, then _sum and _count.
struct LatencyFamily {
  const char* name;
  const char* help;
  ipc::LatencyHistogram ipc::ClassLatencies::*histogram;
};
constexpr LatencyFamily kLatencyFamilies[] = {
    {"tally_preemption_latency_seconds",
     "Time from raising a preemption flag to the end of the preempted kernel, measured on the "
     "device, by the class of the kernel's client.",
     &ipc::ClassLatencies::preemption},
    {"tally_kernel_queue_delay_seconds",
     "Time kernels waited at the head of their client's queue before their issue.",
     &ipc::ClassLatencies::queue_delay},
    {"tally_launch_request_to_issue_seconds",
     "Time from the server's receipt of a kernel launch to its issue to the device.",
     &ipc::ClassLatencies::request_to_issue},
};

void LatencyFamilies(std::string& out, const std::vector<Answered>& servers) {
  for (const LatencyFamily& family : kLatencyFamilies) {
    out +=
        fmt::format("# HELP {} {}\n# TYPE {} histogram\n", family.name, family.help, family.name);
    for (const Answered& server : servers) {
      for (const ipc::PriorityClass c : ipc::kPriorityClasses) {
        const ipc::LatencyHistogram& histogram =
            server.report->server.latencies[static_cast<size_t>(c)].*family.histogram;
        const std::string labels =
            Join(server.label, fmt::format("class=\"{}\"", ipc::PriorityClassName(c)));
        uint64_t cumulative = 0;
        for (size_t b = 0; b < ipc::kLatencyBuckets; ++b) {
          cumulative += histogram.counts[b];
          const std::string le =
              b < std::size(ipc::kLatencyBoundsNs) ? Seconds(ipc::kLatencyBoundsNs[b]) : "+Inf";
          out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", family.name, labels, le, cumulative);
        }
        out += fmt::format("{}_sum{{{}}} {}\n", family.name, labels, Seconds(histogram.sum_ns));
        out += fmt::format("{}_count{{{}}} {}\n", family.name, labels, cumulative);
      }
    }
  }
}

}  // namespace

std::string LabelValue(const std::string& text) {
  std::string out = "\"";
  for (char c : WellFormedUtf8(text)) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string FormatMetrics(const std::vector<ServerStatus>& all, const ClientLabels& client_labels) {
  std::vector<Answered> servers;
  for (const ServerStatus& server : all) {
    if (server.report) {
      servers.push_back({"server=" + LabelValue(server.socket), &*server.report, &client_labels});
    }
  }
  std::string out;
  ServerFamilies(out, all, servers);
  ClientFamilies(out, servers);
  CounterFamilies(out, servers);
  LatencyFamilies(out, servers);
  return out;
}

}  // namespace tally::tools
