#pragma once
// A fixture for pod tests through CriService on a real dockerd, with the real CNI
// plugins (bridge, host-local, portmap, loopback) from testenv::CniBinDir().
//
// Unlike cni_network_test.cc this runs in the host's network namespace, as a node
// does: the infra containers are real Docker containers, so each test makes its own
// bridge "dsbr<N>" (10.99.<N>.0/24, gateway 10.99.<N>.1 on the host) and portmap adds
// its DNAT rules to the host's nat table. Traffic goes only to the pods on that bridge
// and to 127.0.0.1. TearDown removes the pods through the service (releasing the
// addresses and portmap rules), then anything left: containers whose names carry the
// "dstest-sbx-" namespace, the bridge, portmap chains tagged with the test networks,
// and the temp dirs.
//
// The pod infra image is dockershim-test/httpd (busybox httpd serving
// "hello from dockershim-test" on port 80), so the infra container itself answers
// HTTP. Host setup this relies on (a normal node has it; scripts/test-env.sh sees to
// it): iptables in the host namespace (portmap sets route_localnet on the bridge
// itself, so 127.0.0.1:<hostPort> works with no sysctl from the test); for the
// runtime handler tests, /etc/docker/daemon.json with the runtimes "runsc"
// (runtimeArgs ["--network=none"]) and "runc-alt", else those tests skip.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/logs/log_copier.h"
#include "shim/naming.h"
#include "shim/network/cni_network.h"
#include "shim/network/docker_bridge.h"
#include "shim/oom/kernel_oom_log.h"
#include "tests/integration/env.h"
#include "tests/integration/logs_env.h"
#include "tests/integration/shell.h"

namespace shim {
namespace testpods {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

inline constexpr char kHttpdImage[] = "dockershim-test/httpd:latest";
inline constexpr char kHttpdText[] = "hello from dockershim-test";
// What keeps one test file's pods apart from another's, so files may run at once.
struct PodTestScope {
  // Every pod lives in a namespace starting with this, so leftovers of an aborted
  // run are found by name (k8s_POD_<pod>_<prefix>..._<uid>_<attempt>).
  std::string namespace_prefix;
  // CNI network names ("name" in the conflist) start with this; portmap tags its
  // iptables chains with it.
  std::string network_prefix;
  // Bridge numbers: dsbr<N>, 10.99.<N>.0/24, for N in [first_n, last_n].
  int first_n, last_n;
  // Prefix of the file's temp dirs under ::testing::TempDir().
  std::string temp_prefix;
};

using testenv::Sh;
using testenv::ShOk;

// Protobuf maps print as bytes in gtest; compare them as std::map.
inline std::map<std::string, std::string> AsMap(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string RandomHex() {
  static std::mt19937_64 rng{std::random_device{}()};
  return absl::StrCat(absl::Hex(rng() & 0xffffff, absl::kZeroPad6));
}

// One HTTP/1.0 GET with plain sockets; the whole exchange is bounded by `timeout`.
// Returns the response body, or an error saying which step failed.
inline absl::StatusOr<std::string> HttpGetOnce(const std::string& ip, int port, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto remaining_ms = [&] { return std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())); };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1)
    return absl::InvalidArgumentError(absl::StrCat("bad IPv4 address \"", ip, "\""));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const std::string where = absl::StrCat(ip, ":", port);

  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return absl::UnavailableError(absl::StrCat("connect ", where, ": ", std::strerror(errno)));
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(remaining_ms())) != 1)
      return absl::DeadlineExceededError(absl::StrCat("connect ", where, ": timed out"));
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return absl::UnavailableError(absl::StrCat("connect ", where, ": ", std::strerror(err)));
  }
  const std::string request = absl::StrCat("GET / HTTP/1.0\r\nHost: ", where, "\r\nConnection: close\r\n\r\n");
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return absl::UnavailableError(absl::StrCat("send to ", where, ": ", std::strerror(errno)));
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(remaining_ms())) != 1)
      return absl::DeadlineExceededError(absl::StrCat("send to ", where, ": timed out"));
  }
  std::string response;
  for (;;) {
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      response.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return absl::UnavailableError(absl::StrCat("recv from ", where, ": ", std::strerror(errno)));
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(remaining_ms())) != 1)
      return absl::DeadlineExceededError(absl::StrCat("recv from ", where, ": timed out after ", response.size(), " bytes"));
  }
  if (!absl::StartsWith(response, "HTTP/1.") || !absl::StrContains(response, " 200 "))
    return absl::InternalError(absl::StrCat("unexpected response from ", where, ": ", response.substr(0, 200)));
  size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : response.substr(body + 4);
}

// Retries for `total` (httpd needs a moment to listen, portmap a moment to apply).
inline absl::StatusOr<std::string> HttpGet(const std::string& ip, int port, absl::Duration total = absl::Seconds(5)) {
  const absl::Time deadline = absl::Now() + total;
  for (;;) {
    absl::StatusOr<std::string> body = HttpGetOnce(ip, port, absl::Seconds(2));
    if (body.ok() || absl::Now() >= deadline) return body;
    absl::SleepFor(absl::Milliseconds(200));
  }
}

// A TCP port nobody listens on, from `first` upwards.
inline int FreePort(int first) {
  for (int port = first; port < first + 200; ++port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free && !ShOk(absl::StrCat("iptables -w -t nat -S | grep -q -- '--dport ", port, " '"))) return port;
  }
  return 0;
}

// Removes portmap's chains and jumps for every CNI network of this file. portmap
// names its chains CNI-DN-<hash> and tags the jumps to them with a comment
// `dnat name: "<network>" id: "<container>"`.
inline void RemovePortmapRules(const std::string& network_prefix) {
  const std::string rules = Sh("iptables -w -t nat -S");
  std::set<std::string> chains;
  for (absl::string_view line : absl::StrSplit(rules, '\n')) {
    if (!absl::StrContains(line, network_prefix) || !absl::StartsWith(line, "-A ")) continue;
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    for (size_t i = 0; i + 1 < words.size(); ++i)
      if (words[i] == "-j" && absl::StartsWith(words[i + 1], "CNI-DN-")) chains.insert(words[i + 1]);
    // Delete the rule itself ("-A" -> "-D"); comments carry quotes, so run it through sh.
    std::string del(line);
    del.replace(0, 2, "-D");
    Sh("iptables -w -t nat " + del);
  }
  for (const std::string& chain : chains) {
    Sh("iptables -w -t nat -F " + chain);
    Sh("iptables -w -t nat -X " + chain);
  }
}

class PodIntegration : public ::testing::Test {
 protected:
  explicit PodIntegration(PodTestScope scope) : scope_(std::move(scope)) {}

  void SetUp() override {
    auto docker = dockerclient::DockerClientImpl::Create(testenv::DockerEndpoint());
    ASSERT_TRUE(docker.ok()) << docker.status();
    docker_ = std::move(*docker);
    ASSERT_TRUE(docker_->Ping(ctx_).ok()) << "dockerd must run (scripts/test-env.sh)";
    ASSERT_TRUE(docker_->InspectImage(ctx_, kHttpdImage).ok())
        << kHttpdImage << " is missing: run scripts/test-env.sh";
    ASSERT_TRUE(fs::exists(testenv::CniBinDir() + "/bridge"))
        << "containernetworking-plugins must be installed in " << testenv::CniBinDir();

    static std::atomic<int> next{0};
    n_ = scope_.first_n + next++ % (scope_.last_n - scope_.first_n + 1);
    bridge_ = absl::StrCat("dsbr", n_);
    subnet_prefix_ = absl::StrCat("10.99.", n_, ".");
    network_name_ = absl::StrCat(scope_.network_prefix, n_);
    namespace_ = absl::StrCat(scope_.namespace_prefix, n_, "-", RandomHex());
    CleanLeftovers();

    std::string tmpl = ::testing::TempDir() + scope_.temp_prefix + "XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr) << std::strerror(errno);
    dir_ = tmpl;
    root_ = dir_ + "/root";
    conf_dir_ = dir_ + "/net.d";
    cache_dir_ = dir_ + "/cache";
    ipam_dir_ = dir_ + "/ipam";
    fs::create_directories(conf_dir_);
    WriteConfList(R"({"type": "portmap", "capabilities": {"portMappings": true}}, {"type": "loopback"})");
    ASSERT_NO_FATAL_FAILURE(BuildService());
  }

  void TearDown() override {
    // Through the service first, so CNI releases addresses and portmap rules. The
    // infra containers are killed first: busybox httpd as PID 1 ignores SIGTERM, and
    // each graceful stop would cost the shim's 10 s grace period. (Tests that stop
    // pods on purpose still pay it; Stop of a dead infra container is covered by
    // StopAfterTheInfraContainerDiedReleasesTheNetwork.)
    for (const std::string& id : sandboxes_) Sh("docker kill " + id);
    if (service_) {
      for (const std::string& id : sandboxes_) {
        v1::RemovePodSandboxRequest req;
        req.set_pod_sandbox_id(id);
        if (auto s = service_->RemovePodSandbox(ctx_, req); !s.ok())
          ADD_FAILURE() << "TearDown: RemovePodSandbox " << id << ": " << s.status();
      }
    }
    service_.reset();
    log_copier_.reset();
    network_.reset();
    // Then whatever an aborted test left.
    Sh("docker ps -aq --filter name=_" + namespace_ + "_ | xargs -r docker rm -f");
    Sh("ip link del " + bridge_);
    RemovePortmapRules(scope_.network_prefix);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Leftovers of an earlier aborted run of this file with the same bridge number.
  void CleanLeftovers() {
    Sh(absl::StrCat("docker ps -aq --filter name=_", scope_.namespace_prefix, n_, "- | xargs -r docker rm -f"));
    Sh("ip link del " + bridge_);
    RemovePortmapRules(scope_.network_prefix);
    // Temp dirs of killed runs, once per process (this binary's tests run serially).
    static std::once_flag once;
    std::call_once(once, [this] {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(::testing::TempDir(), ec))
        if (absl::StartsWith(e.path().filename().string(), scope_.temp_prefix)) fs::remove_all(e.path(), ec);
    });
  }

  // bridge + host-local, then `more_plugins` (JSON objects, comma-separated).
  void WriteConfList(const std::string& more_plugins) {
    std::ofstream(conf_dir_ + "/10-dstest.conflist") << absl::StrCat(
        R"({"cniVersion": "1.0.0", "name": ")", network_name_, R"(", "plugins": [
             {"type": "bridge", "bridge": ")",
        bridge_, R"(", "isGateway": true, "ipMasq": false,
              "ipam": {"type": "host-local", "ranges": [[{"subnet": ")", subnet_prefix_, R"(0/24"}]],
                       "dataDir": ")",
        ipam_dir_, R"("}})", more_plugins.empty() ? "" : ", ", more_plugins, "]}");
  }

  enum class Plugin { kCni, kDockerBridge };

  // A fresh CniNetwork (or DockerBridgeNetwork) and CriService over the same dirs, as
  // after a shim restart.
  void BuildService(Plugin plugin = Plugin::kCni, const std::string& infra_image = kHttpdImage) {
    service_.reset();
    network_.reset();
    if (plugin == Plugin::kCni) {
      network::CniOptions cni;
      cni.bin_dirs = {testenv::CniBinDir()};
      cni.conf_dir = conf_dir_;
      cni.cache_dir = cache_dir_;
      auto cni_network = std::make_unique<network::CniNetwork>(cni);
      cni_ = cni_network.get();
      network_ = std::move(cni_network);
    } else {
      cni_ = nullptr;
      network_ = std::make_unique<network::DockerBridgeNetwork>(*docker_);
    }
    Options options;
    options.root_directory = root_;
    options.pod_infra_image = infra_image;
    options.network_plugin = network_->Name();
    if (!log_copier_) {
      logs::CopierOptions copier_options;
      copier_options.docker_socket_path = std::string(absl::StripPrefix(testenv::DockerEndpoint(), "unix://"));
      copier_options.read_json_files = testenv::LogsFromFiles();
      log_copier_ = std::make_unique<logs::LogCopier>(*docker_, copier_options);
    }
    options.log_copier = log_copier_.get();
    options.oom_kills = &oom_log_;
    service_ = std::make_unique<CriService>(options, *docker_, *network_);
    absl::Status init = service_->Init();
    ASSERT_TRUE(init.ok()) << init;
  }

  v1::PodSandboxConfig BaseConfig(const std::string& pod_name) {
    v1::PodSandboxConfig config;
    config.mutable_metadata()->set_name(pod_name);
    config.mutable_metadata()->set_namespace_(namespace_);
    config.mutable_metadata()->set_uid("uid-" + pod_name + "-" + RandomHex());
    config.mutable_metadata()->set_attempt(0);
    config.mutable_linux();  // kubelet always sends it; tests that want none clear it
    return config;
  }

  absl::StatusOr<std::string> Run(const v1::PodSandboxConfig& config, const std::string& handler = "") {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = config;
    req.set_runtime_handler(handler);
    absl::StatusOr<v1::RunPodSandboxResponse> resp = service_->RunPodSandbox(ctx_, req);
    if (!resp.ok()) return resp.status();
    sandboxes_.push_back(resp->pod_sandbox_id());
    return resp->pod_sandbox_id();
  }

  // The test busybox running `command`, as the kubelet configures a container (its log
  // lands in the pod's log directory, if the pod has one).
  v1::ContainerConfig Busybox(const std::string& name, std::vector<std::string> command = {"sleep", "600"}) {
    v1::ContainerConfig c;
    c.mutable_metadata()->set_name(name);
    c.mutable_image()->set_image(testenv::BusyboxImage());
    for (auto& part : command) c.add_command(part);
    c.set_log_path(name + "/0.log");
    c.mutable_linux();
    return c;
  }

  absl::StatusOr<std::string> Create(const std::string& pod_id, const v1::PodSandboxConfig& pod,
                                     const v1::ContainerConfig& config) {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(pod_id);
    *req.mutable_config() = config;
    *req.mutable_sandbox_config() = pod;
    ASSIGN_OR_RETURN(v1::CreateContainerResponse resp, service_->CreateContainer(ctx_, req));
    return resp.container_id();
  }

  absl::Status Start(const std::string& id) {
    v1::StartContainerRequest req;
    req.set_container_id(id);
    return service_->StartContainer(ctx_, req).status();
  }

  absl::StatusOr<v1::ContainerStatus> ContainerStatus(const std::string& id) {
    v1::ContainerStatusRequest req;
    req.set_container_id(id);
    ASSIGN_OR_RETURN(v1::ContainerStatusResponse resp, service_->ContainerStatus(ctx_, req));
    return resp.status();
  }

  absl::Status RemoveContainer(const std::string& id) {
    v1::RemoveContainerRequest req;
    req.set_container_id(id);
    return service_->RemoveContainer(ctx_, req).status();
  }

  absl::StatusOr<v1::PodSandboxStatus> Status(const std::string& id) {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(id);
    absl::StatusOr<v1::PodSandboxStatusResponse> resp = service_->PodSandboxStatus(ctx_, req);
    if (!resp.ok()) return resp.status();
    return resp->status();
  }

  absl::Status Stop(const std::string& id) {
    v1::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(id);
    return service_->StopPodSandbox(ctx_, req).status();
  }

  absl::Status Remove(const std::string& id) {
    v1::RemovePodSandboxRequest req;
    req.set_pod_sandbox_id(id);
    return service_->RemovePodSandbox(ctx_, req).status();
  }

  std::vector<std::string> List(const std::map<std::string, std::string>& selector,
                                std::optional<v1::PodSandboxState> state = std::nullopt) {
    v1::ListPodSandboxRequest req;
    for (const auto& [k, v] : selector) (*req.mutable_filter()->mutable_label_selector())[k] = v;
    if (state) req.mutable_filter()->mutable_state()->set_state(*state);
    auto resp = service_->ListPodSandbox(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    std::vector<std::string> ids;
    if (resp.ok())
      for (const auto& s : resp->items()) ids.push_back(s.id());
    return ids;
  }

  // host-local's reservation files (one per allocated IP) for this test's network.
  std::vector<std::string> Reservations() const {
    std::vector<std::string> ips;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(ipam_dir_ + "/" + network_name_, ec)) {
      std::string name = e.path().filename().string();
      if (absl::StartsWith(name, subnet_prefix_)) ips.push_back(name);
    }
    return ips;
  }
  std::vector<std::string> Checkpoints() const {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root_ + "/sandbox", ec)) files.push_back(e.path().filename().string());
    return files;
  }
  std::vector<std::string> CacheFiles() const {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(cache_dir_, ec))
      if (e.is_regular_file()) files.push_back(e.path().string());
    return files;
  }

  absl::StatusOr<dockerclient::ContainerInspect> Inspect(const std::string& id) {
    return docker_->InspectContainer(ctx_, id);
  }
  int Pid(const std::string& id) {
    auto inspect = Inspect(id);
    EXPECT_TRUE(inspect.ok()) << inspect.status();
    return inspect.ok() ? inspect->state.pid : 0;
  }
  std::string NatRules() const { return Sh("iptables -w -t nat -S"); }

  // Skips the test unless Docker knows `runtime`.
  bool DockerHasRuntime(const std::string& runtime) {
    auto info = docker_->Info(ctx_);
    EXPECT_TRUE(info.ok()) << info.status();
    if (!info.ok()) return false;
    return std::find(info->runtimes.begin(), info->runtimes.end(), runtime) != info->runtimes.end();
  }

  const PodTestScope scope_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(120));
  int n_ = 0;
  std::string bridge_, subnet_prefix_, network_name_, namespace_;
  std::string dir_, root_, conf_dir_, cache_dir_, ipam_dir_;
  std::unique_ptr<dockerclient::DockerClient> docker_;
  std::unique_ptr<network::NetworkPlugin> network_;
  network::CniNetwork* cni_ = nullptr;  // network_, when it is CNI
  std::unique_ptr<logs::LogCopier> log_copier_;  // writes the CRI log files; outlives service_
  oom::KernelOomLog oom_log_;                    // as main.cc gives the service; outlives service_
  std::unique_ptr<CriService> service_;
  std::vector<std::string> sandboxes_;  // removed in TearDown
};

}  // namespace testpods
}  // namespace shim
