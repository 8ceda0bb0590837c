// A server's status as Prometheus metrics (metrics_format.h).
#include "tools/tally_ctl/metrics_format.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "tools/tally_ctl/status_format.h"

namespace tally::tools {
namespace {

using Client = ipc::ClientStatus;
using Departed = ipc::DepartedStatus;

// One sample: its labels (already `name="value"` pairs, comma-separated) and value.
struct Sample {
  std::string labels;
  std::string value;
};

void Family(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            const std::vector<Sample>& samples) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  for (const Sample& sample : samples) {
    if (sample.labels.empty()) {
      out += fmt::format("{} {}\n", name, sample.value);
    } else {
      out += fmt::format("{}{{{}}} {}\n", name, sample.labels, sample.value);
    }
  }
}

std::string ClientLabel(const Client& client) {
  return fmt::format("client=\"{}\"", client.client_id);
}
constexpr char kDepartedLabel[] = "client=\"departed\"";

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

void CounterFamilies(std::string& out, const ipc::StatusReport& report) {
  for (const CounterFamily& family : Counters()) {
    std::vector<Sample> samples;
    auto labels = [](const std::string& client, const char* label) {
      return *label == '\0' ? client : client + "," + label;
    };
    for (const Client& client : report.clients) {
      for (const CounterSeries& series : family.series) {
        samples.push_back(
            {labels(ClientLabel(client), series.label), std::to_string(client.*series.client)});
      }
    }
    for (const CounterSeries& series : family.series) {
      samples.push_back({labels(kDepartedLabel, series.label),
                         std::to_string(report.server.departed.*series.departed)});
    }
    Family(out, family.name, "counter", family.help, samples);
  }
  std::vector<Sample> calls;
  auto add_calls = [&](const std::string& client, const ipc::LibraryCalls& counts) {
    for (ipc::Library library : ipc::kLibraries) {
      calls.push_back({fmt::format("{},library=\"{}\"", client, ipc::LibraryName(library)),
                       std::to_string(counts[library])});
    }
  };
  for (const Client& client : report.clients) add_calls(ClientLabel(client), client.library_calls);
  add_calls(kDepartedLabel, report.server.departed.library_calls);
  Family(out, "tally_library_calls_total", "counter",
         "Calls of cuBLAS, cuBLASLt and cuDNN served by Tally's own kernels, counted at their "
         "first kernel launch.",
         calls);
}

// A gauge of every connected client.
void ClientGauge(std::string& out, const ipc::StatusReport& report, std::string_view name,
                 std::string_view help, uint64_t Client::*field) {
  std::vector<Sample> samples;
  for (const Client& client : report.clients) {
    samples.push_back({ClientLabel(client), std::to_string(client.*field)});
  }
  Family(out, name, "gauge", help, samples);
}

// A limit of every connected client that has one.
void ClientLimit(std::string& out, const ipc::StatusReport& report, std::string_view name,
                 std::string_view help, uint64_t Client::*field) {
  std::vector<Sample> samples;
  for (const Client& client : report.clients) {
    if (client.*field != ipc::kNoLimit) {
      samples.push_back({ClientLabel(client), std::to_string(client.*field)});
    }
  }
  Family(out, name, "gauge", help, samples);
}

void ServerFamilies(std::string& out, const ipc::StatusReport& report) {
  const ipc::StatusReply& server = report.server;
  const bool emulated = server.backend == static_cast<uint32_t>(ipc::Backend::kEmulator);
  Family(out, "tally_server_info", "gauge", "The server's device and backend.",
         {{fmt::format("backend=\"{}\",device={}", emulated ? "emulator" : "nvidia-driver",
                       LabelValue(server.device_name)),
           "1"}});
  Family(out, "tally_device_memory_bytes", "gauge", "Memory of the device.",
         {{"", std::to_string(server.total_memory)}});
  Family(out, "tally_device_memory_free_bytes", "gauge",
         "Free memory of the device (cuMemGetInfo).", {{"", std::to_string(server.free_memory)}});
  Family(out, "tally_clients", "gauge", "Clients connected.",
         {{"", std::to_string(report.clients.size())}});
  Family(out, "tally_departed_clients_total", "counter", "Clients that have left the server.",
         {{"", std::to_string(server.departed.clients)}});
}

void ClientFamilies(std::string& out, const ipc::StatusReport& report) {
  std::vector<Sample> info, priority, held, latency_total, latencies, latency_max;
  for (const Client& client : report.clients) {
    const std::string label = ClientLabel(client);
    info.push_back({fmt::format("{},pid=\"{}\",priority={},command={}", label, client.pid,
                                LabelValue(PriorityName(client)), LabelValue(client.command)),
                    "1"});
    priority.push_back({label, std::to_string(client.priority)});
    held.push_back({label, Seconds(client.held_ns)});
    latency_total.push_back({label, Seconds(client.preemption_latency_ns_total)});
    latencies.push_back({label, std::to_string(client.preemption_latencies)});
    latency_max.push_back({label, Seconds(client.preemption_latency_ns_max)});
  }
  Family(out, "tally_client_info", "gauge", "A connected client: its pid, priority and command.",
         info);
  Family(out, "tally_client_priority_level", "gauge",
         "The client's priority level; higher is more important (best-effort 0, high 1).",
         priority);
  ClientGauge(out, report, "tally_client_memory_bytes", "Device memory the client holds.",
              &Client::memory_bytes);
  ClientLimit(out, report, "tally_client_memory_limit_bytes",
              "The client's device-memory limit, where it has one.", &Client::memory_limit);
  ClientGauge(out, report, "tally_client_allocations", "Device allocations the client holds.",
              &Client::allocations);
  ClientGauge(out, report, "tally_client_pinned_bytes",
              "Page-locked host memory registered for the client.", &Client::pinned_bytes);
  ClientLimit(out, report, "tally_client_pinned_limit_bytes",
              "The client's page-locked memory limit, where it has one.", &Client::pinned_limit);
  ClientGauge(out, report, "tally_client_streams", "Streams of the client besides its default.",
              &Client::streams);
  ClientGauge(out, report, "tally_client_events", "Events of the client.", &Client::events);
  ClientGauge(out, report, "tally_client_modules", "Modules the client loaded.", &Client::modules);
  ClientGauge(out, report, "tally_client_queued_commands",
              "Stream work accepted from the client but not yet issued to the device.",
              &Client::queued_commands);
  Family(out, "tally_client_held_seconds_total", "counter",
         "Time the client's kernels were held back for more important work.", held);
  Family(out, "tally_client_preemption_latency_seconds_total", "counter",
         "Measured preemption latencies (flag raised to kernel end, on the device), summed.",
         latency_total);
  Family(out, "tally_client_preemptions_measured_total", "counter",
         "Preemptions whose latency was measured.", latencies);
  Family(out, "tally_client_preemption_latency_max_seconds", "gauge",
         "The longest measured preemption latency.", latency_max);
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

std::string FormatStatusMetrics(const ipc::StatusReport& report) {
  std::string out;
  ServerFamilies(out, report);
  ClientFamilies(out, report);
  CounterFamilies(out, report);
  return out;
}

}  // namespace tally::tools
