// tally-exporter: serves the metrics of the node's tally-servers over HTTP for Prometheus to
// scrape (GET /metrics), asking each server for its status at every scrape, so that the servers
// themselves open no TCP port. One process per node.
#include <httplib.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ipc/control.h"
#include "ipc/socket_path.h"
#include "tools/tally_ctl/metrics_format.h"
#ifdef TALLY_EXPORTER_POD_LABELS
#include "tools/tally_exporter/pod_labels.h"
#endif

namespace {

constexpr char kDescription[] =
    "Serves the metrics of tally-servers over HTTP for Prometheus: GET /metrics answers, in\n"
    "Prometheus's text format, what `tally-ctl metrics` prints for every server given (and\n"
    "every server socket in the run directory), each asked at the scrape (tally_server_up says "
    "which\n"
    "answered). Prints the address it serves once it listens; ends on SIGINT or SIGTERM.";

struct Options {
  std::string listen = "127.0.0.1:9410";
  std::vector<std::string> servers;
  // --run-dir, else (without --server and TALLY_SERVER) the run directory: every server
  // socket there, listed again at each scrape.
  std::string run_dir;
  double timeout_seconds = 2;
  // --pod-resources-socket: the kubelet's, asked at each scrape for the clients' pods (none:
  // no pod labels).
  std::string pod_resources_socket;
  std::string resource_prefix = "tally.dev";
  tally::ipc::ServerTrust trust;  // TALLY_SERVER_UID, as for every client of a server
};

std::string ServedDescription(const Options& options) {
  std::string servers = std::to_string(options.servers.size()) + " server(s)";
  if (options.run_dir.empty()) return servers;
  const std::string in_dir = "the sockets in " + options.run_dir;
  return options.servers.empty() ? in_dir : servers + " and " + in_dir;
}

// HOST:PORT, split at the last colon (port 0: any free port).
bool SplitAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  try {
    size_t used = 0;
    *port = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || *port < 0 || *port > 65535) return false;
  } catch (const std::exception&) {
    return false;
  }
  *host = address.substr(0, colon);
  return true;
}

std::string Scrape(const Options& options) {
  std::vector<std::string> sockets = options.servers;
  for (std::string& socket : tally::ipc::ServerSockets(options.run_dir))
    sockets.push_back(std::move(socket));
  std::vector<tally::tools::ServerStatus> servers;
  for (const std::string& socket : sockets) {
    auto report =
        tally::ipc::QueryStatus(socket, absl::Seconds(options.timeout_seconds), options.trust);
    servers.push_back({socket, report.ok() ? std::optional(*std::move(report)) : std::nullopt});
  }
#ifdef TALLY_EXPORTER_POD_LABELS
  if (!options.pod_resources_socket.empty()) {
    return tally::tools::FormatMetricsWithPods(servers, options.pod_resources_socket,
                                               options.resource_prefix,
                                               absl::Seconds(options.timeout_seconds));
  }
#endif
  return tally::tools::FormatMetrics(servers);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app(kDescription, "tally-exporter");
  app.add_option("--listen", options.listen, "HOST:PORT to serve on (port 0: any free one)")
      ->capture_default_str();
  app.add_option("--server", options.servers,
                 "a tally-server's socket; repeat for several (default: TALLY_SERVER, else "
                 "every server socket in the run directory, listed at each scrape)");
  app.add_option("--run-dir", options.run_dir,
                 "a folder of tally-servers' sockets to serve, listed at each scrape (default "
                 "without --server: TALLY_RUN_DIR, else $XDG_RUNTIME_DIR/tally, else "
                 "/tmp/tally-$UID)");
  app.add_option("--timeout", options.timeout_seconds,
                 "seconds to wait for each server's answer at a scrape")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
#ifdef TALLY_EXPORTER_POD_LABELS
  app.add_option("--pod-resources-socket", options.pod_resources_socket,
                 "the kubelet's pod-resources socket (e.g. "
                 "/var/lib/kubelet/pod-resources/kubelet.sock): every client's series get the "
                 "namespace, pod and container of the grant it connected through, asked at each "
                 "scrape within --timeout (tally_exporter_pod_resources_up says whether the "
                 "kubelet answered)");
  app.add_option("--resource-prefix", options.resource_prefix,
                 "the prefix of the device plugin's resources (PREFIX/gpu-high, "
                 "PREFIX/gpu-best-effort)")
      ->capture_default_str()
      ->check([](const std::string& prefix) {
        return std::string(tally::kubelet::CheckResourcePrefix(prefix).message());
      });
#endif
  CLI11_PARSE(app, argc, argv);
  std::string host;
  int port = 0;
  if (!SplitAddress(options.listen, &host, &port)) {
    std::fprintf(stderr, "tally-exporter: --listen wants HOST:PORT, not '%s'\n",
                 options.listen.c_str());
    return 2;
  }
  if (const char* named = std::getenv("TALLY_SERVER");
      options.servers.empty() && options.run_dir.empty() && named != nullptr && *named != '\0') {
    options.servers.push_back(named);
  }
  if (options.servers.empty() && options.run_dir.empty()) {
    auto run_dir = tally::ipc::RunDirectory(tally::ipc::DirectoryMode::kCheckIfPresent);
    if (!run_dir.ok()) {
      std::fprintf(stderr, "tally-exporter: no run directory: %s\n",
                   std::string(run_dir.status().message()).c_str());
      return 1;
    }
    options.run_dir = *run_dir;
  }
  auto trust = tally::ipc::ServerTrust::FromEnvironment();
  if (!trust.ok()) {
    std::fprintf(stderr, "tally-exporter: %s\n", std::string(trust.status().message()).c_str());
    return 2;
  }
  options.trust = *std::move(trust);
  // Not an error: the system's exporter may start before any server has made the folder.
  if (std::error_code error;
      !options.run_dir.empty() && !std::filesystem::is_directory(options.run_dir, error)) {
    std::fprintf(stderr, "tally-exporter: %s is not a folder (yet): no server there is scraped\n",
                 options.run_dir.c_str());
  }

  // Signals are taken by this thread with sigwait; the HTTP threads never see them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  httplib::Server http;
  http.Get("/metrics", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content(Scrape(options), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("tally-exporter: the metrics are at /metrics\n", "text/plain");
  });
  const int bound =
      port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    std::fprintf(stderr, "tally-exporter: cannot listen on %s\n", options.listen.c_str());
    return 1;
  }
  std::printf("tally-exporter: serving http://%s:%d/metrics for %s\n", host.c_str(), bound,
              ServedDescription(options).c_str());
  std::fflush(stdout);
  std::thread serving([&] { http.listen_after_bind(); });
  int signal = 0;
  sigwait(&stop_signals, &signal);
  http.stop();
  serving.join();
  return 0;
}
