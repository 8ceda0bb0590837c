// tally-ctl's formatting: JSON string escaping (also of bytes that are not UTF-8), the outputs
// of a report with and without clients, library calls included, and its Prometheus metrics.
#include <catch2/catch.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "tools/tally_ctl/metrics_format.h"
#include "tools/tally_ctl/status_format.h"

namespace tally::tools {
namespace {

ipc::StatusReport Report(bool with_client) {
  ipc::StatusReport report{};
  report.server.server_pid = 42;
  report.server.backend = static_cast<uint32_t>(ipc::Backend::kEmulator);
  report.server.total_memory = uint64_t{4} << 30;
  report.server.free_memory = uint64_t{3} << 30;
  ipc::CopyText("Tally \"Emulated\" GPU", report.server.device_name,
                sizeof(report.server.device_name));
  ipc::CopyText("emulator (--emulate)", report.server.backend_description,
                sizeof(report.server.backend_description));
  report.server.device_ordinal = 1;
  for (uint8_t i = 0; i < 16; ++i) report.server.device_uuid[i] = i;
  report.server.max_clients = 64;
  report.server.departed.clients = 3;
  report.server.departed.faulted_clients = 1;
  report.server.context_faults = 2;
  report.server.high_busy_ns = 1'500'000'000;
  report.server.departed.kernels_preemptible = 9;
  report.server.departed.preemptions = 4;
  report.server.departed.library_calls[ipc::Library::kCublasLt] = 6;
  report.server.departed.vendor_library_calls[ipc::Library::kCublas] = 8;
  report.server.isolation = ipc::Isolation::kFenced;
  report.server.unfenceable = ipc::Unfenceable::kAlone;
  report.server.modules = {.modules_registered = 2,
                           .kernels_indexed = 300,
                           .kernels_transformed = 1,
                           .forms_loaded = 2,
                           .forms_queued = 3,
                           .forms_made = 1,
                           .forms_waited = 4};
  if (with_client) {
    ipc::ClientStatus client{};
    client.client_id = ClientId(7);
    client.pid = 1234;
    client.client_priority = {.level = -1, .is_set = 1};
    client.kernels_original = 5;
    client.kernels_preemptible = 2;
    client.kernels_preempted = 1;
    client.preemptions = 3;
    client.resumes = 2;
    client.preemption_latencies = 2;
    client.preemption_latency_ns_total = 3'000'000;
    client.preemption_latency_ns_max = 2'000'000;
    client.memory_bytes = 256 << 20;
    client.allocations = 2;
    client.memory_limit = 268435457;
    client.pinned_bytes = 8192;
    client.pinned_limit = ipc::kNoLimit;
    client.streams = 4;
    client.events = 5;
    client.modules = 1;
    client.queued_commands = 3;
    client.library_calls[ipc::Library::kCublas] = 11;
    client.library_calls[ipc::Library::kCudnn] = 2;
    client.vendor_library_calls[ipc::Library::kCublas] = 4;
    client.unfenced_refused = 6;
    client.unfenced_alone = 9;
    client.unfenced_waiting = 1;
    client.fence_violated = 1;
    client.sticky_error = 700;  // CUDA_ERROR_ILLEGAL_ADDRESS
    client.slowdown_budget = ipc::WireSlowdownBudget::From(SlowdownBudget{0.15, 0.95});
    client.measured_slowdown = 0.125;
    ipc::CopyText("./app --name=a\\b", client.command, sizeof(client.command));
    report.clients.push_back(client);
  }
  return report;
}

TEST_CASE("JSON strings escape quotes, backslashes, control characters and bad UTF-8") {
  CHECK(JsonString("plain") == "\"plain\"");
  CHECK(JsonString("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(JsonString(std::string("x\n\t\x01", 4)) == "\"x\\u000a\\u0009\\u0001\"");
  CHECK(JsonString("caf\xc3\xa9") == "\"caf\xc3\xa9\"");   // valid UTF-8 stays
  CHECK(JsonString("\xff") == "\"\\ufffd\"");             // never a valid byte
  CHECK(JsonString("\xc3") == "\"\\ufffd\"");             // truncated sequence
  CHECK(JsonString("\xc0\xaf") == "\"\\ufffd\\ufffd\"");  // overlong '/'
  CHECK(JsonString("\xed\xa0\x80") == "\"\\ufffd\\ufffd\\ufffd\"");  // a surrogate
}

TEST_CASE("status as JSON has every key, with and without clients") {
  const std::string empty = FormatStatusJson(Report(false), "/tmp/s.sock");
  CHECK(empty ==
        "{\n"
        "  \"socket\": \"/tmp/s.sock\",\n"
        "  \"server_pid\": 42,\n"
        "  \"device\": {\"name\": \"Tally \\\"Emulated\\\" GPU\", \"ordinal\": 1, "
        "\"uuid\": \"GPU-00010203-0405-0607-0809-0a0b0c0d0e0f\", \"total_memory_bytes\": "
        "4294967296, \"free_memory_bytes\": 3221225472, \"context_faults\": 2, "
        "\"busy_ns\": {\"high\": 1500000000}},\n"
        "  \"max_clients\": 64,\n"
        "  \"draining\": false,\n"
        "  \"admission_waiting\": 0,\n"
        "  \"backend\": {\"kind\": \"emulator\", \"description\": \"emulator (--emulate)\"},\n"
        "  \"isolation\": \"fenced\",\n"
        "  \"unfenceable\": \"alone\",\n"
        "  \"departed\": {\"clients\": 3, \"scheduling\": {\"kernels_original\": 0, "
        "\"kernels_sliced\": 0, \"slices\": 0, \"kernels_preemptible\": 9, "
        "\"kernels_preempted\": 0, \"preemptions\": 4, \"resumes\": 0, \"risky_launches\": 0, "
        "\"unfit_launches\": 0}, "
        "\"library_calls\": {\"cublas\": 0, \"cublaslt\": 6, \"cudnn\": 0}, "
        "\"vendor_library_calls\": {\"cublas\": 8, \"cublaslt\": 0, \"cudnn\": 0}, "
        "\"faulted_clients\": 1},\n"
        "  \"modules\": {\"registered\": 2, \"kernels_indexed\": 300, "
        "\"kernels_transformed\": 1, \"forms_loaded\": 2, \"forms_queued\": 3, "
        "\"forms_made\": 1, \"forms_waited\": 4},\n"
        "  \"code_cache\": null,\n"
        "  \"clients\": [],\n"
        "  \"grants\": []\n"
        "}\n");
  const std::string one = FormatStatusJson(Report(true), "/tmp/s.sock");
  CHECK(
      one.find("\"clients\": [\n    {\"id\": 7, \"pid\": 1234, \"command\": "
               "\"./app --name=a\\\\b\", \"priority\": -1, \"priority_set\": true, "
               "\"memory_bytes\": 268435456, \"allocations\": 2, "
               "\"memory_limit_bytes\": 268435457, \"pinned_bytes\": 8192, "
               "\"pinned_limit_bytes\": null, \"streams\": 4, \"events\": 5, "
               "\"modules\": 1, \"queued_commands\": 3, "
               "\"scheduling\": {\"kernels_original\": 5, \"kernels_sliced\": 0, "
               "\"slices\": 0, \"kernels_preemptible\": 2, \"kernels_preempted\": 1, "
               "\"preemptions\": 3, \"resumes\": 2, \"risky_launches\": 0, \"unfit_launches\": 0, "
               "\"held_ns\": 0, "
               "\"preemption_latencies\": 2, \"preemption_latency_ns_total\": 3000000, "
               "\"preemption_latency_ns_max\": 2000000}, "
               "\"library_calls\": {\"cublas\": 11, \"cublaslt\": 0, \"cudnn\": 2}, "
               "\"vendor_library_calls\": {\"cublas\": 4, \"cublaslt\": 0, \"cudnn\": 0}, "
               "\"unfenced_refused\": 6, \"unfenced_alone\": 9, \"unfenced_waiting\": 1, "
               "\"fence_violated\": true, \"sticky_error\": 700, "
               "\"grant\": null, \"slowdown_budget\": {\"text\": \"15%@p95\", "
               "\"slowdown\": 0.15, \"percentile\": 0.95, \"measured_slowdown\": 0.125}}"
               "\n  ],\n  \"grants\": []\n}\n") != std::string::npos);
  ipc::StatusReport unmeasured = Report(true);
  unmeasured.clients[0].measured_slowdown = -1;
  CHECK(FormatStatusJson(unmeasured, "/s").find("\"measured_slowdown\": null}") !=
        std::string::npos);
  unmeasured.clients[0].slowdown_budget = {};  // a server that sent none
  CHECK(FormatStatusJson(unmeasured, "/s").find("\"slowdown_budget\": null}") != std::string::npos);
}

TEST_CASE("the code cache: none, or its folder and counters, as text and as JSON") {
  ipc::CodeCacheStatus cache{};
  CHECK(FormatCodeCacheText(cache) == "code cache: none\n");
  CHECK(FormatCodeCacheJson(cache) == "null");
  cache = {.enabled = 1,
           .reserved = 0,
           .entries = 3,
           .bytes = 4096,
           .limit_bytes = 1 << 30,
           .hits = 5,
           .misses = 2,
           .stored = 2,
           .evicted = 1,
           .corrupt = 1,
           .machine_code = {.linked = 4, .loaded = 6, .refused = 1, .link_failed = 0, .filling = 1},
           .dir = {}};
  ipc::CopyText("/cache/\"code\"", cache.dir, sizeof(cache.dir));
  CHECK(FormatCodeCacheText(cache) ==
        "code cache: /cache/\"code\" (3 entries, 4096 of 1073741824 bytes); since the server "
        "started: 5 hits, 2 misses, 2 stored, 1 evicted, 1 corrupt; machine code: 4 linked, 6 "
        "loaded from the cache, 1 refused by the driver, 0 links failed, 1 linking now\n");
  CHECK(FormatCodeCacheJson(cache) ==
        "{\"dir\": \"/cache/\\\"code\\\"\", \"entries\": 3, \"bytes\": 4096, "
        "\"limit_bytes\": 1073741824, \"hits\": 5, \"misses\": 2, \"stored\": 2, "
        "\"evicted\": 1, \"corrupt\": 1, \"machine_code\": {\"linked\": 4, \"loaded\": 6, "
        "\"refused\": 1, \"link_failed\": 0, \"filling\": 1}}");
  ipc::StatusReport report = Report(false);
  report.server.code_cache = cache;
  CHECK(FormatStatusText(report, "/s").find("code cache: /cache/") != std::string::npos);
}

TEST_CASE("status shows the grants and each client's grant") {
  ipc::StatusReport report = Report(true);
  ipc::CopyText("job-1", report.clients[0].grant, sizeof(report.clients[0].grant));
  ipc::GrantStatus& grant = report.grants.emplace_back();
  ipc::CopyText("job-1", grant.name, sizeof(grant.name));
  ipc::CopyText("/run/tally/gpu0.grants/job-1/server.sock", grant.socket, sizeof(grant.socket));
  grant.client_priority_level = 0;
  grant.clients = 1;
  grant.memory_limit = 1 << 20;
  grant.pinned_limit = ipc::kNoLimit;
  const std::string json = FormatStatusJson(report, "/tmp/s.sock");
  CHECK(json.find("\"grant\": \"job-1\", ") != std::string::npos);
  CHECK(json.find("\"grants\": [\n    {\"name\": \"job-1\", \"socket\": "
                  "\"/run/tally/gpu0.grants/job-1/server.sock\", \"priority\": 0, "
                  "\"memory_limit_bytes\": 1048576, \"pinned_limit_bytes\": null, "
                  "\"clients\": 1}\n  ]\n}\n") != std::string::npos);
  const std::string text = FormatStatusText(report, "/tmp/s.sock");
  CHECK(text.find("grants: 1\n") != std::string::npos);
  CHECK(text.find("[grant job-1]") != std::string::npos);
  CHECK(text.find("/run/tally/gpu0.grants/job-1/server.sock") != std::string::npos);
}

TEST_CASE("status --all: every server, those not running with why") {
  const std::vector<SocketStatus> servers = {
      {"/run/GPU-a.sock", Report(false)},
      {"/run/GPU-b.sock", absl::UnavailableError("connection refused")}};
  const std::string json = FormatAllStatusJson(servers);
  CHECK(json.starts_with("[\n{\n  \"socket\": \"/run/GPU-a.sock\","));
  CHECK(
      json.ends_with("\n},\n{\"socket\": \"/run/GPU-b.sock\", \"running\": false, "
                     "\"error\": \"connection refused\"}\n]\n"));
  const std::string text = FormatAllStatusText(servers);
  CHECK(text.starts_with("tally-server pid 42 on /run/GPU-a.sock\n"));
  CHECK(text.ends_with("\n\n/run/GPU-b.sock: not running (connection refused)\n"));
}

TEST_CASE("status as text lists the clients") {
  const std::string text = FormatStatusText(Report(true), "/tmp/s.sock");
  CHECK(text.find("tally-server pid 42 on /tmp/s.sock") != std::string::npos);
  CHECK(text.find("backend: emulator (emulator (--emulate))") != std::string::npos);
  CHECK(text.find("busy: 1.500 s with high-priority work on the device\n") != std::string::npos);
  CHECK(text.find("clients: 1") != std::string::npos);
  CHECK(text.find("free), device 1, GPU-00010203-0405-0607-0809-0a0b0c0d0e0f\n") !=
        std::string::npos);
  CHECK(text.find("accepting clients: yes (1 of at most 64 clients); 0 waiting for memory") !=
        std::string::npos);
  CHECK(text.find(
            "departed: 3 client(s); their kernels: 0 original, 0 sliced (0 slices), 9 "
            "preemptible (0 preempted, 4 preemptions, 0 resumes), 0 risky, 0 unfit; their "
            "library calls served by Tally's kernels: cublas 0, cublaslt 6, cudnn 0; run in the "
            "vendor library: cublas 8, cublaslt 0, cudnn 0\n") != std::string::npos);
  CHECK(text.find("modules: 2 registered; kernels: 300 indexed, 1 transformed (2 forms loaded); "
                  "forms in the background: 3 queued, 1 made, 4 launches waited for them\n") !=
        std::string::npos);
  CHECK(text.find("256.0 MiB") != std::string::npos);
  CHECK(text.find("./app --name=a\\b") != std::string::npos);
  CHECK(text.find("          -1") != std::string::npos);  // the priority level
  CHECK(text.find("2(1)") != std::string::npos);          // PTB kernels (preempted)
  // Usage and limits exactly, in bytes.
  CHECK(text.find("      268435456      268435457         8192           none       4       5") !=
        std::string::npos);
  CHECK(text.find("1.500/2.000 ms") != std::string::npos);
  CHECK(text.find("library calls, served by Tally's kernels / run in the vendor library:\n"
                  "    ID          CUBLAS        CUBLASLT           CUDNN\n"
                  "     7            11/4             0/0             2/0\n") != std::string::npos);
  CHECK(text.find("budgets:\n    ID         BUDGET  MEASURED\n"
                  "     7        15%@p95     12.5%\n") != std::string::npos);
  CHECK(text.find("isolation: fenced (unfenceable kernels: alone)\n") != std::string::npos);
  CHECK(text.find("isolation:\n    ID UNFENCED REFUSED UNFENCED ALONE UNFENCED WAITING FENCE "
                  "VIOLATED\n"
                  "     7                6              9                1            yes\n") !=
        std::string::npos);
  CHECK(FormatStatusText(Report(false), "/s").find("clients: 0\n") != std::string::npos);
}

TEST_CASE("Prometheus label values escape quotes, backslashes, line feeds and bad UTF-8") {
  CHECK(LabelValue("a\"b\\c\nd") == "\"a\\\"b\\\\c\\nd\"");
  CHECK(LabelValue("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(LabelValue("\xff") == "\"\xef\xbf\xbd\"");
}

// Every line of `text` is a HELP or TYPE comment or a sample of the family last typed (a
// histogram's: its _bucket, _sum and _count), in the text exposition format; each family is
// typed once, counters end in _total.
void CheckExposition(const std::string& text) {
  const std::regex help(R"(# HELP (tally_[a-z_]+) \S.*)");
  const std::regex type(R"(# TYPE (tally_[a-z_]+) (counter|gauge|histogram))");
  const std::regex sample(R"re((tally_[a-z_]+)(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? [0-9.e+-]+)re");
  std::istringstream lines(text);
  std::string line, family;
  bool histogram = false;
  std::set<std::string> typed;
  std::smatch match;
  while (std::getline(lines, line)) {
    INFO(line);
    if (std::regex_match(line, match, help)) continue;
    if (std::regex_match(line, match, type)) {
      family = match[1];
      histogram = match[2] == "histogram";
      CHECK(typed.insert(family).second);
      CHECK((match[2] == "counter") == family.ends_with("_total"));
      continue;
    }
    REQUIRE(std::regex_match(line, match, sample));
    if (histogram) {
      CHECK((match[1] == family + "_bucket" || match[1] == family + "_sum" ||
             match[1] == family + "_count"));
    } else {
      CHECK(match[1] == family);
    }
  }
}

TEST_CASE("latency histograms per priority class: cumulative buckets in seconds, sum, count") {
  ipc::StatusReport report = Report(false);
  ipc::LatencyHistogram& delay =
      report.server.latencies[static_cast<size_t>(ipc::PriorityClass::kHigh)].queue_delay;
  delay.counts[0] = 2;                         // at most 10 us
  delay.counts[5] = 1;                         // at most 1 ms
  delay.counts[ipc::kLatencyBuckets - 1] = 1;  // beyond 1 s
  delay.sum_ns = 1'002'500'000;
  const std::string text = FormatMetrics({{"/tmp/s.sock", report}});
  CheckExposition(text);
  const std::string series = "tally_kernel_queue_delay_seconds";
  const std::string labels = "{server=\"/tmp/s.sock\",class=\"high\"";
  for (const std::string& line : {
           series + "_bucket" + labels + ",le=\"1e-05\"} 2\n",
           series + "_bucket" + labels + ",le=\"0.0005\"} 2\n",
           series + "_bucket" + labels + ",le=\"0.001\"} 3\n",
           series + "_bucket" + labels + ",le=\"1\"} 3\n",
           series + "_bucket" + labels + ",le=\"+Inf\"} 4\n",
           series + "_sum" + labels + "} 1.0025\n",
           series + "_count" + labels + "} 4\n",
           // The other class and the other histograms are there, empty.
           series + "_count{server=\"/tmp/s.sock\",class=\"best-effort\"} 0\n",
           std::string("tally_preemption_latency_seconds_count") + labels + "} 0\n",
           std::string("tally_launch_request_to_issue_seconds_bucket") + labels +
               ",le=\"+Inf\"} 0\n",
       }) {
    INFO(line);
    CHECK(text.find(line) != std::string::npos);
  }
}

TEST_CASE("status as Prometheus metrics: each server, each client's series and the departed") {
  const std::string with_client =
      FormatMetrics({{"/tmp/s.sock", Report(true)}, {"/tmp/gone.sock", std::nullopt}});
  CheckExposition(with_client);
  CheckExposition(FormatMetrics({{"/tmp/s.sock", Report(false)}}));
  for (const char* line : {
           "tally_server_info{server=\"/tmp/s.sock\",backend=\"emulator\",device=\"Tally "
           "\\\"Emulated\\\" GPU\",device_ordinal=\"1\","
           "device_uuid=\"GPU-00010203-0405-0607-0809-0a0b0c0d0e0f\"} 1\n",
           "tally_device_memory_bytes{server=\"/tmp/s.sock\"} 4294967296\n",
           "tally_device_memory_free_bytes{server=\"/tmp/s.sock\"} 3221225472\n",
           "tally_clients{server=\"/tmp/s.sock\"} 1\n",
           "tally_departed_clients_total{server=\"/tmp/s.sock\"} 3\n",
           "tally_client_info{server=\"/tmp/"
           "s.sock\",client=\"7\",pid=\"1234\",priority=\"-1\",command=\"./app "
           "--name=a\\\\b\",grant=\"\"} 1\n",
           "tally_client_faulted{server=\"/tmp/s.sock\",client=\"7\"} 1\n",
           "tally_departed_faulted_clients_total{server=\"/tmp/s.sock\"} 1\n",
           "tally_device_context_faults_total{server=\"/tmp/s.sock\"} 2\n",
           "tally_device_busy_seconds_total{server=\"/tmp/s.sock\",level=\"high\"} 1.5\n",
           "tally_client_priority_level{server=\"/tmp/s.sock\",client=\"7\"} -1\n",
           "tally_client_memory_bytes{server=\"/tmp/s.sock\",client=\"7\"} 268435456\n",
           "tally_client_memory_limit_bytes{server=\"/tmp/s.sock\",client=\"7\"} 268435457\n",
           "tally_client_queued_commands{server=\"/tmp/s.sock\",client=\"7\"} 3\n",
           "tally_client_preemption_latency_seconds_total{server=\"/tmp/s.sock\",client=\"7\"} "
           "0.003\n",
           "tally_client_preemption_latency_max_seconds{server=\"/tmp/s.sock\",client=\"7\"} "
           "0.002\n",
           "tally_kernels_total{server=\"/tmp/s.sock\",client=\"7\",form=\"original\"} 5\n",
           "tally_kernels_total{server=\"/tmp/s.sock\",client=\"7\",form=\"preemptible\"} 2\n",
           "tally_kernels_total{server=\"/tmp/s.sock\",client=\"departed\",form=\"preemptible\"} "
           "9\n",
           "tally_preemptions_total{server=\"/tmp/s.sock\",client=\"7\"} 3\n",
           "tally_preemptions_total{server=\"/tmp/s.sock\",client=\"departed\"} 4\n",
           "tally_library_calls_total{server=\"/tmp/"
           "s.sock\",client=\"7\",library=\"cublas\",ran_in=\"tally\"} 11\n",
           "tally_library_calls_total{server=\"/tmp/"
           "s.sock\",client=\"7\",library=\"cublas\",ran_in=\"vendor\"} 4\n",
           "tally_library_calls_total{server=\"/tmp/"
           "s.sock\",client=\"departed\",library=\"cublaslt\",ran_in=\"tally\"} 6\n",
           "tally_library_calls_total{server=\"/tmp/"
           "s.sock\",client=\"departed\",library=\"cublas\",ran_in=\"vendor\"} 8\n",
       }) {
    INFO(line);
    CHECK(with_client.find(line) != std::string::npos);
  }
  CHECK(with_client.find("tally_server_up{server=\"/tmp/s.sock\"} 1\n") != std::string::npos);
  CHECK(with_client.find("tally_server_up{server=\"/tmp/gone.sock\"} 0\n") != std::string::npos);
  CHECK(with_client.find("server=\"/tmp/gone.sock\",") == std::string::npos);
  // No pinned limit: no series.
  CHECK(with_client.find("tally_client_pinned_limit_bytes{") == std::string::npos);
}

TEST_CASE("labels given for clients follow the id on every series of a connected client") {
  const ipc::StatusReport report = Report(true);
  const std::string text = FormatMetrics(
      {{"/tmp/s.sock", report}},
      [&](const ipc::StatusReport& server, const ipc::ClientStatus& client) {
        CHECK(server.clients.size() == report.clients.size());  // the client's own server's
        return client.client_id == ClientId(7) ? std::string("pod=\"p\"") : std::string();
      });
  CheckExposition(text);
  std::istringstream lines(text);
  int labelled = 0;
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.find("client=\"7\"") == line.find("client=\"7\",pod=\"p\""));
    CHECK(line.find("client=\"departed\",pod=") == std::string::npos);
    labelled += line.find(",pod=\"p\"") != std::string::npos;
  }
  CHECK(labelled > 20);
  // No labels given: the text of FormatMetrics without them.
  CHECK(FormatMetrics({{"/tmp/s.sock", report}}, nullptr) ==
        FormatMetrics({{"/tmp/s.sock", report}}));
}

}  // namespace
}  // namespace tally::tools
