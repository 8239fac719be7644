// dockershim: serves CRI v1 on a unix socket and drives Docker Engine.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "common/log_context.h"
#include "common/signals.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/config/config_file.h"
#include "observability/families.h"
#include "observability/http_server.h"
#include "shim/cri_service.h"
#include "shim/cri_socket.h"
#include "shim/events/event_hub.h"
#include "shim/grpc_limits.h"
#include "shim/grpc_services.h"
#include "shim/network/cni_network.h"
#include "shim/network/docker_bridge.h"
#include "shim/logs/log_copier.h"
#include "shim/migrate/command.h"
#include "shim/oom/kernel_oom_log.h"
#include "shim/memory/memory.h"
#include "shim/runtime_cgroups/runtime_cgroups.h"
#include "shim/stats/writable_layers.h"
#include "shim/streaming_runtime.h"
#include "shim/systemd/inherited_listener.h"
#include "shim/systemd/listen_fds.h"
#include "shim/systemd/notify.h"
#include "shim/view/view_client.h"
#include "streaming/server.h"

namespace {

struct Flags {
  std::string endpoint = "unix:///var/run/dockershim.sock";
  std::string docker_endpoint = "unix:///var/run/docker.sock";
  std::string pod_infra_image = "registry.k8s.io/pause:3.10";
  std::string network_plugin = "cni";
  std::string cni_bin_dir = "/opt/cni/bin,/usr/lib/cni";
  std::string cni_conf_dir = "/etc/cni/net.d";
  std::string cni_cache_dir = "/var/lib/cni/cache";
  std::string root_directory = "/var/lib/dockershim";
  std::string cri_dockerd_root_directory = "/var/lib/cri-dockerd";
  std::string streaming_bind_addr = "127.0.0.1:0";
  std::string streaming_tls_cert, streaming_tls_key;
  std::string streaming_idle_timeout = "4h";
  std::string pull_progress_deadline = "1m";
  std::string runtime_request_timeout = "2m";
  std::string log_level = "info";
  std::string runtime_cgroups;
  std::string metrics_bind_addr;
  std::string cri_socket_group;
  bool relist_from_memory = true;
  bool container_logs_from_files = true;
};

[[noreturn]] void Usage(const std::string& message) {
  std::cerr << "dockershim: " << message << " (see --help)\n";
  std::exit(2);
}

absl::Duration ParseDurationFlag(const std::string& name, const std::string& value) {
  absl::Duration d;
  if (!absl::ParseDuration(value, &d) || d <= absl::ZeroDuration())
    Usage("--" + name + ": \"" + value + "\" is not a positive duration such as 30s, 1m or 1m30s");
  return d;
}

// The soft limit of open files raised to the hard one, as every Go program (cri-dockerd,
// containerd, the kubelet) does at start: the stats keep each running container's cgroup
// files open (KeptKernelFiles, up to half of the limit), about 7 per container, past
// the usual soft limit of 1024 on a full node. The packaged unit sets both already.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t soft = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) {
    LOG_INFO << "open files limit raised from " << soft << " to " << limit.rlim_max;
  } else {
    LOG_WARN << "cannot raise the open files limit from " << soft << ": " << std::strerror(errno);
  }
}

// "" for fd://: the socket systemd passed.
std::string SocketPath(const std::string& endpoint) {
  if (endpoint == "fd://") return "";
  if (absl::StartsWith(endpoint, "unix://")) return endpoint.substr(7);
  if (absl::StartsWith(endpoint, "/")) return endpoint;
  Usage("--container-runtime-endpoint: \"" + endpoint + "\" must be unix:///path/to/socket or fd://");
}

// "unix:///var/run/docker.sock" or a bare path (DockerClientImpl::Create refused others).
std::string DockerSocketPath(const std::string& endpoint) {
  return absl::StartsWith(endpoint, "unix://") ? endpoint.substr(7) : endpoint;
}

}  // namespace

int main(int argc, char** argv) {
  // `dockershim migrate ...`: a command run once on a node, not the daemon.
  if (argc > 1 && std::string_view(argv[1]) == "migrate") return shim::migrate::MigrateCommand(argc - 1, argv + 1);
  shim::memory::TuneMalloc();
  // Debian's abseil is built without NDEBUG, so every absl::Mutex (gRPC's too) would
  // keep a lock graph for deadlock detection, a debugging aid paid on every lock.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  Flags f;
  CLI::App app{"dockershim: a Kubernetes CRI runtime on Docker Engine", "dockershim"};
  app.set_version_flag("--version", std::string("dockershim ") + DOCKERSHIM_VERSION);
  app.footer("Switching a node from or back to cri-dockerd: dockershim migrate from-cri-dockerd|to-cri-dockerd "
             "[--dry-run] (dockershim migrate --help)");
  app.add_option("--container-runtime-endpoint", f.endpoint, "CRI socket to serve")->capture_default_str();
  app.add_option("--cri-socket-group", f.cri_socket_group,
                 "group (name or gid) that may connect to the CRI socket, mode 0660 (default: the shim's, root)");
  app.add_option("--docker-endpoint", f.docker_endpoint, "Docker Engine socket")->capture_default_str();
  app.add_option("--pod-infra-container-image", f.pod_infra_image, "image of the pod infra (pause) container")
      ->capture_default_str();
  app.add_option("--network-plugin", f.network_plugin, "\"cni\", or \"docker\" for Docker's bridge network")
      ->capture_default_str();
  app.add_option("--cni-bin-dir", f.cni_bin_dir, "comma-separated directories of CNI plugins")->capture_default_str();
  app.add_option("--cni-conf-dir", f.cni_conf_dir, "directory of CNI network configs")->capture_default_str();
  app.add_option("--cni-cache-dir", f.cni_cache_dir, "where CNI results are cached")->capture_default_str();
  app.add_option("--root-directory", f.root_directory, "state directory (sandbox checkpoints)")->capture_default_str();
  app.add_option("--cri-dockerd-root-directory", f.cri_dockerd_root_directory,
                 "cri-dockerd's state directory, read only: the checkpoints of pods it started are imported")
      ->capture_default_str();
  app.add_option("--streaming-bind-addr", f.streaming_bind_addr, "address of the exec/attach/port-forward server")
      ->capture_default_str();
  app.add_option("--streaming-tls-cert", f.streaming_tls_cert, "serve streaming over TLS with this certificate (PEM)");
  app.add_option("--streaming-tls-key", f.streaming_tls_key, "the key of --streaming-tls-cert (PEM)");
  app.add_option("--streaming-connection-idle-timeout", f.streaming_idle_timeout,
                 "close an exec/attach/port-forward session idle this long")
      ->capture_default_str();
  app.add_option("--image-pull-progress-deadline", f.pull_progress_deadline,
                 "cancel a pull that makes no progress for this long")
      ->capture_default_str();
  app.add_option("--runtime-request-timeout", f.runtime_request_timeout, "bound for every CRI call but pulls")
      ->capture_default_str();
  app.add_option("--log-level", f.log_level, "trace, debug, info, warn or error")->capture_default_str();
  app.add_option("--runtime-cgroups", f.runtime_cgroups,
                 "cgroup to keep dockerd and containerd in (created if missing), with oom_score_adj -999");
  app.add_option("--metrics-bind-addr", f.metrics_bind_addr,
                 "serve /metrics and /healthz on host:port (:port is 127.0.0.1:port); off when empty");
  app.add_option("--relist-from-memory", f.relist_from_memory,
                 "answer ListPodSandbox/ListContainers from a view kept by Docker's events (false: ask Docker each time)")
      ->capture_default_str();
  app.add_option("--container-logs-from-files", f.container_logs_from_files,
                 "copy the logs of json-file containers from Docker's log files (false: always from Docker's logs API)")
      ->capture_default_str();
  bool print_config = false;
  shim::config::AddConfigOptions(app, &print_config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    Usage(shim::config::DescribeParseError(app, e));
  }

  common::LogLevel level;
  if (!common::ParseLogLevel(f.log_level, &level)) Usage("--log-level: unknown level \"" + f.log_level + "\"");
  common::SetLogLevel(level);
  common::SetTraceCalls(f.log_level == "trace");
  RaiseOpenFileLimit();
  if (f.network_plugin == "kubenet") Usage("--network-plugin: kubenet is not supported; use cni");
  if (f.network_plugin != "cni" && f.network_plugin != "docker" && !f.network_plugin.empty())
    Usage("--network-plugin: unknown plugin \"" + f.network_plugin + "\" (use cni or docker)");

  shim::Options options;
  options.docker_endpoint = f.docker_endpoint;
  options.pod_infra_image = f.pod_infra_image;
  options.root_directory = f.root_directory;
  options.cri_dockerd_root_directory = f.cri_dockerd_root_directory;
  options.network_plugin = f.network_plugin.empty() ? "docker" : f.network_plugin;
  options.image_pull_progress_deadline = ParseDurationFlag("image-pull-progress-deadline", f.pull_progress_deadline);
  shim::GrpcOptions grpc_options;
  grpc_options.runtime_request_timeout = ParseDurationFlag("runtime-request-timeout", f.runtime_request_timeout);
  const std::string socket_path = SocketPath(f.endpoint);
  auto socket_gid = shim::ResolveSocketGroup(f.cri_socket_group);
  if (!socket_gid.ok()) Usage("--cri-socket-group: " + std::string(socket_gid.status().message()));

  auto docker = dockerclient::DockerClientImpl::Create(f.docker_endpoint);
  if (!docker.ok()) Usage("--docker-endpoint: " + std::string(docker.status().message()));
  if (absl::Status s = shim::runtime_cgroups::ValidateCgroupPath(f.runtime_cgroups);
      !f.runtime_cgroups.empty() && !s.ok())
    Usage("--runtime-cgroups: " + std::string(s.message()));
  if (print_config) {
    std::cout << shim::config::EffectiveConfig(app);
    return 0;
  }
  auto listen_fds = shim::systemd::TakeListenFds();
  if (!listen_fds.ok()) Usage(std::string(listen_fds.status().message()));
  if (listen_fds->size() > 1)
    Usage("socket activation: pass one socket (LISTEN_FDS=1), not " + std::to_string(listen_fds->size()));
  if (socket_path.empty() && listen_fds->empty())
    Usage("--container-runtime-endpoint fd:// needs a socket from systemd (LISTEN_FDS)");

  // Signals are taken by WaitForStopSignal below; block them before any thread starts.
  common::BlockStopSignals();

  observability::Health health(
      [&docker] { return (*docker)->Ping(common::Context::WithTimeout(absl::Seconds(2))).status(); });
  std::unique_ptr<observability::MetricsServer> metrics_server;
  if (!f.metrics_bind_addr.empty()) {
    auto started = observability::MetricsServer::Start(f.metrics_bind_addr, observability::DefaultRegistry(),
                                                       [&health] { return health.Check(); });
    if (!started.ok()) Usage("--metrics-bind-addr: " + std::string(started.status().message()));
    metrics_server = std::move(*started);
    LOG_INFO << "serving metrics on http://" << metrics_server->address() << "/metrics and /healthz";
  }

  if (auto api = (*docker)->Ping(common::Context::WithTimeout(absl::Seconds(10))); api.ok()) {
    LOG_INFO << "connected to Docker at " << f.docker_endpoint << ", API " << *api;
  } else {
    LOG_WARN << api.status().message() << "; RuntimeReady stays false until Docker answers";
  }

  std::unique_ptr<shim::runtime_cgroups::RuntimeCgroups> runtime_cgroups;
  if (!f.runtime_cgroups.empty()) {
    auto started = shim::runtime_cgroups::RuntimeCgroups::Start(
        shim::runtime_cgroups::DefaultOptions(f.runtime_cgroups, DockerSocketPath(f.docker_endpoint)));
    if (!started.ok()) {
      LOG_ERROR << "--runtime-cgroups " << f.runtime_cgroups << ": " << started.status().message();
      return 1;
    }
    runtime_cgroups = *std::move(started);
  }

  std::unique_ptr<network::NetworkPlugin> network;
  if (options.network_plugin == "cni") {
    network::CniOptions cni;
    for (absl::string_view dir : absl::StrSplit(f.cni_bin_dir, ',', absl::SkipEmpty()))
      cni.bin_dirs.emplace_back(dir);
    cni.conf_dir = f.cni_conf_dir;
    cni.cache_dir = f.cni_cache_dir;
    cni.owner = "dockershim " + f.root_directory;
    network = std::make_unique<network::CniNetwork>(std::move(cni));
  } else {
    network = std::make_unique<network::DockerBridgeNetwork>(**docker);
  }
  streaming::ServerOptions streaming_options;
  streaming_options.bind_address = f.streaming_bind_addr;
  streaming_options.tls_cert_file = f.streaming_tls_cert;
  streaming_options.tls_key_file = f.streaming_tls_key;
  streaming_options.idle_timeout = ParseDurationFlag("streaming-connection-idle-timeout", f.streaming_idle_timeout);
  shim::DockerStreamingRuntime streaming_runtime(**docker, nullptr);
  auto streaming_server = streaming::Server::Start(streaming_options, streaming_runtime);
  if (!streaming_server.ok()) {
    LOG_ERROR << "streaming server (--streaming-bind-addr " << f.streaming_bind_addr
              << "): " << streaming_server.status().message();
    return 1;
  }
  options.streaming = streaming_server->get();

  shim::logs::CopierOptions copier_options;
  copier_options.docker_socket_path = DockerSocketPath(f.docker_endpoint);
  copier_options.read_json_files = f.container_logs_from_files;
  shim::logs::LogCopier log_copier(**docker, copier_options);
  options.log_copier = &log_copier;
  shim::oom::KernelOomLog oom_log;
  options.oom_kills = &oom_log;
  // Writable-layer sizes take a walk of each layer: done on its own thread, read by stats.
  shim::stats::WritableLayerCollector writable_layers;
  options.writable_layers = &writable_layers;

  // Relists from memory: the view follows Docker's events with the hub (below).
  shim::view::ContainerView view(**docker);
  shim::view::ViewClient viewed(**docker, view);
  if (f.relist_from_memory) options.container_view = &view;
  shim::CriService service(options, f.relist_from_memory ? static_cast<dockerclient::DockerClient&>(viewed) : **docker,
                           *network);
  // GetContainerEvents: one Docker events stream shared by every subscriber. Followed
  // before Init lists the containers to resume their log copies: one that was only
  // created then has its copy started by the start event that comes after the list.
  shim::events::HubOptions hub_options;
  hub_options.docker_socket_path = DockerSocketPath(f.docker_endpoint);
  shim::events::EventHub events(
      **docker, hub_options,
      [&service](const shim::events::CriEvent& event) {
        return service.BuildContainerEvent(common::Context::WithTimeout(absl::Seconds(30)), event);
      },
      f.relist_from_memory ? &view : nullptr,
      [&service](const shim::events::CriEvent& event) { service.OnContainerEvent(event); });
  if (absl::Status s = service.Init(); !s.ok()) {
    LOG_ERROR << "cannot prepare " << options.root_directory << ": " << s.message();
    return 1;
  }
  shim::memory::HeapTrimmer heap_trimmer;
  // The workers that run CRI calls (lanes.h); gRPC's threads only hand calls over.
  shim::dispatch::Dispatcher dispatcher(shim::dispatch::DefaultLimits(), [&heap_trimmer] { heap_trimmer.NoteCallEnded(); });
  shim::RuntimeServiceImpl runtime_service(service, grpc_options, dispatcher, &events);
  shim::ImageServiceImpl image_service(service, grpc_options, dispatcher);

  // A socket file left by a previous run would make bind fail.
  const bool activated = !listen_fds->empty();
  if (!activated && ::unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    LOG_ERROR << "cannot remove stale socket " << socket_path << ": " << std::strerror(errno);
    return 1;
  }
  grpc::ServerBuilder builder;
  if (!activated) builder.AddListeningPort("unix://" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(&runtime_service);
  builder.RegisterService(&image_service);
  shim::ApplyGrpcLimits(builder);
  std::unique_ptr<grpc::Server> server;
  {
    shim::PrivateUmask private_umask;  // the socket is born 0600, then opened to its group
    server = builder.BuildAndStart();
  }
  if (!server) {
    LOG_ERROR << "cannot listen on " << f.endpoint;
    return 1;
  }
  std::unique_ptr<shim::systemd::InheritedListener> inherited;
  if (activated) {
    auto listener = shim::systemd::InheritedListener::Start(std::move(listen_fds->front()), *server);
    if (!listener.ok()) {
      LOG_ERROR << "socket activation: " << listener.status().message();
      return 1;
    }
    inherited = *std::move(listener);
  } else if (absl::Status s = shim::RestrictSocket(socket_path, *socket_gid); !s.ok()) {
    LOG_ERROR << "CRI socket: " << s.message();
    return 1;
  }
  shim::memory::ReleaseStartupPages();
  health.SetServing(true);
  LOG_INFO << "dockershim " << DOCKERSHIM_VERSION << " serving CRI v1 on "
           << (activated ? "the socket systemd passed" : f.endpoint) << " (network plugin " << network->Name() << ")";
  const shim::systemd::Notifier systemd = shim::systemd::Notifier::FromEnvironment();
  systemd.Notify("READY=1");
  std::optional<shim::systemd::Watchdog> watchdog;
  if (auto interval = shim::systemd::WatchdogInterval(); interval && systemd.enabled())
    watchdog.emplace(systemd, *interval);

  const char* sig = common::WaitForStopSignal();
  LOG_INFO << "received SIG" << sig << ", finishing in-flight calls";
  health.SetServing(false);
  systemd.Notify("STOPPING=1");
  if (inherited) inherited->Stop();
  // Event streams never end by themselves: ended first, they do not hold up the shutdown.
  events.Stop();
  // In-flight calls get a bounded grace period; then they are cancelled.
  shim::StopServing(*server, dispatcher, absl::Seconds(10));
  (*streaming_server)->Stop();
  log_copier.Stop();
  writable_layers.Stop();
  oom_log.Stop();
  if (metrics_server) metrics_server->Stop();
  if (runtime_cgroups) runtime_cgroups->Stop();
  heap_trimmer.Stop();
  if (!activated) ::unlink(socket_path.c_str());  // systemd owns a passed socket
  LOG_INFO << "stopped";
  return 0;
}
