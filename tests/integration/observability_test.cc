// The real binary with --metrics-bind-addr and --log-level=trace: after a pod's life
// (pull, runp, create, start, exec over the streaming server, stop, rm) every metric
// family is scraped with plausible values, /healthz answers, and the trace lists each
// call's Docker and CNI requests without a credential.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/cri.h"
#include "common/unique_fd.h"
#include "shim/registry_auth.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/daemon.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"
#include "tests/support/stream_clients.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using testenv::Daemon;
using testenv::Sh;

constexpr int kBridge = 243;  // dsbr243, 10.99.243.0/24: no other test file uses it
constexpr char kNamespace[] = "dsobs";

struct HttpAnswer {
  int status = 0;
  std::string body;
};

// GET over HTTP/1.0 (the server closes after answering).
absl::StatusOr<HttpAnswer> Get(const std::string& address, const std::string& path) {
  const std::size_t colon = address.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  ::inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
  common::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    return absl::UnavailableError(absl::StrCat("connect ", address, ": ", std::strerror(errno)));
  if (!streamtest::WriteAll(fd.get(), "GET " + path + " HTTP/1.0\r\nHost: test\r\n\r\n"))
    return absl::UnavailableError("write");
  absl::StatusOr<std::string> raw = streamtest::ReadFdToEof(fd.get(), absl::Seconds(10));
  if (!raw.ok()) return raw.status();
  const std::size_t end = raw->find("\r\n\r\n");
  HttpAnswer answer;
  if (end == std::string::npos || raw->size() < 12 || !absl::SimpleAtoi(raw->substr(9, 3), &answer.status))
    return absl::InternalError("not an HTTP answer: " + raw->substr(0, 200));
  answer.body = raw->substr(end + 4);
  return answer;
}

// The sum of the samples whose series starts with `prefix` ("name{a=\"b\"" or
// "name "), -1 when there is none.
double Sum(const std::string& metrics, const std::string& prefix) {
  double sum = -1;
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    double v = 0;
    if (!absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) continue;
    sum = (sum < 0 ? 0 : sum) + v;
  }
  return sum;
}

// The trace block that starts with `header` (its lines start with two spaces).
std::string TraceBlock(const std::string& log, const std::string& header) {
  const std::size_t start = log.find(header);
  if (start == std::string::npos) return "";
  std::size_t end = start;
  while ((end = log.find('\n', end)) != std::string::npos && end + 1 < log.size() && log[end + 1] == ' ') ++end;
  return log.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

class ObservabilityIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsobs-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "net.d");
    socket_ = (dir_ / "shim.sock").string();
    Cleanup();
    std::ofstream(dir_ / "net.d" / "10-dsobs.conflist") << absl::StrCat(
        R"({"cniVersion": "1.0.0", "name": "dsobsnet", "plugins": [{"type": "bridge", "bridge": "dsbr)", kBridge,
        R"(", "isGateway": true, "ipMasq": false, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.)",
        kBridge, R"(.0/24"}]], "dataDir": ")", (dir_ / "ipam").string(), R"("}}, {"type": "loopback"}]})");
  }
  void TearDown() override {
    daemon_.reset();
    Cleanup();
    fs::remove_all(dir_);
  }
  void Cleanup() {
    Sh(absl::StrCat("docker ps -aq --filter name=_", kNamespace, "_ | xargs -r docker rm -f"));
    Sh(absl::StrCat("ip link del dsbr", kBridge));
  }

  std::vector<std::string> Args(const std::string& docker_endpoint, const std::string& metrics) {
    return {"--container-runtime-endpoint", "unix://" + socket_, "--docker-endpoint", docker_endpoint,
            "--network-plugin", "cni", "--cni-bin-dir", testenv::CniBinDir(), "--cni-conf-dir",
            (dir_ / "net.d").string(), "--cni-cache-dir", (dir_ / "cache").string(), "--root-directory",
            (dir_ / "root").string(), "--pod-infra-container-image", testenv::PauseImage(), "--log-level", "trace",
            "--metrics-bind-addr", metrics};
  }

  // Starts the shim; returns the metrics address it logged, "" on failure.
  std::string Start(const std::string& docker_endpoint) {
    daemon_ = std::make_unique<Daemon>(dir_, Args(docker_endpoint, "127.0.0.1:0"));
    const std::regex serving("serving metrics on http://([0-9.]+:[0-9]+)/metrics");
    for (int i = 0; i < 500; ++i) {
      std::smatch m;
      const std::string log = daemon_->Stderr();
      struct stat st;
      if (std::regex_search(log, m, serving) && ::stat(socket_.c_str(), &st) == 0) return m[1];
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "the shim did not start: " << daemon_->Stderr();
    return "";
  }

  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return ctx;
  }

  fs::path dir_;
  std::string socket_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(ObservabilityIntegration, APodsLifeShowsInEveryFamilyAndInTheTrace) {
  const std::string metrics_address = Start(testenv::DockerEndpoint());
  ASSERT_FALSE(metrics_address.empty());
  testenv::CriClient cri(socket_, std::chrono::seconds(60));

  auto health = Get(metrics_address, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");

  // A pull with credentials: the trace must show the request and hide them.
  v1::PullImageRequest pull;
  pull.mutable_image()->set_image(testenv::AuthRegistry() + "/private/busybox:latest");
  pull.mutable_auth()->set_username(testenv::AuthUser());
  pull.mutable_auth()->set_password(testenv::AuthPassword());
  v1::PullImageResponse pulled;
  grpc::Status s = cri.images().PullImage(Ctx().get(), pull, &pulled);
  ASSERT_TRUE(s.ok()) << s.error_message();

  v1::PodSandboxConfig pod;
  pod.mutable_metadata()->set_name("obs");
  pod.mutable_metadata()->set_namespace_(kNamespace);
  pod.mutable_metadata()->set_uid("obs-" + std::to_string(getpid()));
  pod.set_log_directory((dir_ / "logs").string());
  pod.mutable_linux();
  std::string pod_id;
  s = cri.RunPodSandbox(pod, &pod_id);
  ASSERT_TRUE(s.ok()) << s.error_message();

  v1::ContainerConfig app = testenv::BusyboxContainer("app", {"sh", "-c", "echo hello-from-obs; exec sleep 3600"});
  app.add_envs()->set_key("API_TOKEN");
  app.mutable_envs(0)->set_value("env-secret-value");
  app.set_log_path("app/0.log");
  std::string container_id;
  s = cri.CreateAndStartContainer(pod_id, pod, app, &container_id);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // An exec through the streaming server (WebSocket, v4).
  v1::ExecRequest exec;
  exec.set_container_id(container_id);
  for (const char* part : {"echo", "-n", "from-exec"}) exec.add_cmd(part);
  exec.set_stdout(true);
  v1::ExecResponse exec_url;
  s = cri.runtime().Exec(Ctx().get(), exec, &exec_url);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto ws = streamtest::WsClient::Connect(exec_url.url(), {"v4.channel.k8s.io"});
  ASSERT_TRUE(ws.ok()) << ws.status();
  std::string output;
  for (;;) {
    absl::StatusOr<streamtest::WsMessage> m = (*ws)->Receive(absl::Seconds(20));
    if (!m.ok()) break;  // the server closed: the exec ended
    if (m->data.size() > 1 && m->data[0] == 1) output += m->data.substr(1);
  }
  EXPECT_EQ(output, "from-exec");
  ws->reset();

  // One failing call, counted under its code.
  v1::ContainerStatusRequest missing;
  missing.set_container_id("no-such-container");
  v1::ContainerStatusResponse missing_status;
  EXPECT_EQ(cri.runtime().ContainerStatus(Ctx().get(), missing, &missing_status).error_code(),
            grpc::StatusCode::NOT_FOUND);

  // The log copier has written the container's line.
  const fs::path cri_log = dir_ / "logs" / "app" / "0.log";
  for (int i = 0; i < 250 && testenv::ReadFile(cri_log).find("hello-from-obs") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_THAT(testenv::ReadFile(cri_log), HasSubstr("hello-from-obs"));

  s = cri.StopAndRemoveContainer(container_id, 1);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = cri.StopAndRemovePodSandbox(pod_id);
  ASSERT_TRUE(s.ok()) << s.error_message();

  auto scraped = Get(metrics_address, "/metrics");
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  ASSERT_EQ(scraped->status, 200);
  const std::string& m = scraped->body;
  for (const char* family :
       {"dockershim_cri_requests_total", "dockershim_cri_request_duration_seconds",
        "dockershim_docker_request_duration_seconds", "dockershim_cni_operation_duration_seconds",
        "dockershim_cni_operation_errors_total", "dockershim_streaming_sessions_active",
        "dockershim_streaming_sessions_total", "dockershim_log_copier_bytes_total", "dockershim_log_copier_lag_seconds",
        "process_resident_memory_bytes", "process_open_fds", "process_threads", "process_cpu_seconds_total"}) {
    EXPECT_THAT(m, HasSubstr(std::string("# TYPE ") + family + " ")) << family;
  }
  for (const char* method : {"PullImage", "RunPodSandbox", "CreateContainer", "StartContainer", "Exec",
                             "StopContainer", "RemoveContainer", "StopPodSandbox", "RemovePodSandbox"}) {
    EXPECT_EQ(Sum(m, absl::StrCat("dockershim_cri_requests_total{method=\"", method, "\",code=\"OK\"}")), 1) << method;
    EXPECT_EQ(Sum(m, absl::StrCat("dockershim_cri_request_duration_seconds_count{method=\"", method, "\"}")), 1)
        << method;
    EXPECT_GT(Sum(m, absl::StrCat("dockershim_cri_request_duration_seconds_sum{method=\"", method, "\"}")), 0)
        << method;
  }
  EXPECT_EQ(Sum(m, "dockershim_cri_requests_total{method=\"ContainerStatus\",code=\"NOT_FOUND\"}"), 1);
  // The pause and the app container; 201 Created.
  EXPECT_EQ(Sum(m, "dockershim_docker_request_duration_seconds_count{method=\"POST\",endpoint=\"/containers/create\","
                   "status=\"201\"}"),
            2);
  EXPECT_GE(Sum(m, "dockershim_docker_request_duration_seconds_count{method=\"POST\",endpoint=\"/images/create\","
                   "status=\"200\"}"),
            1);
  EXPECT_GE(Sum(m, "dockershim_docker_request_duration_seconds_count{method=\"GET\",endpoint=\"/containers/{id}/json\","
                   "status=\"200\"}"),
            1);
  EXPECT_GE(Sum(m, "dockershim_docker_request_duration_seconds_count{method=\"POST\",endpoint=\"/exec/{id}/start\""), 1);
  EXPECT_EQ(Sum(m, "dockershim_cni_operation_duration_seconds_count{operation=\"ADD\",plugin=\"bridge\","
                   "network=\"dsobsnet\"}"),
            1);
  EXPECT_GE(Sum(m, "dockershim_cni_operation_duration_seconds_count{operation=\"DEL\",plugin=\"bridge\","
                   "network=\"dsobsnet\"}"),
            1);
  EXPECT_EQ(Sum(m, "dockershim_cni_operation_duration_seconds_count{operation=\"ADD\",plugin=\"loopback\""), 1);
  EXPECT_EQ(Sum(m, "dockershim_streaming_sessions_total{kind=\"exec\"}"), 1);
  EXPECT_EQ(Sum(m, "dockershim_streaming_sessions_active{kind=\"exec\"}"), 0);  // it ended
  EXPECT_GE(Sum(m, "dockershim_log_copier_bytes_total "), 40);  // timestamp, stream, tag and the line
  EXPECT_GE(Sum(m, "dockershim_log_copier_lag_seconds_count "), 1);
  EXPECT_GT(Sum(m, "process_resident_memory_bytes "), 1 << 20);
  EXPECT_GT(Sum(m, "process_open_fds "), 3);
  EXPECT_GT(Sum(m, "process_threads "), 2);
  EXPECT_GT(Sum(m, "process_cpu_seconds_total "), 0);

  // The trace: each call's block lists its Docker and CNI calls, without a secret.
  const std::string log = daemon_->Stderr();
  const std::string pull_block = TraceBlock(log, "[PullImage] trace: PullImage OK in ");
  EXPECT_THAT(pull_block, HasSubstr("/images/create?fromImage="));
  EXPECT_THAT(pull_block, HasSubstr("(X-Registry-Auth: <redacted>) -> 200 in "));
  EXPECT_THAT(pull_block, HasSubstr("/images/" + testenv::AuthRegistry() + "/private/busybox:latest/json"));
  EXPECT_THAT(pull_block, ContainsRegex("/private/busybox:latest/json(\\?manifests=1)? -> 200"));
  const std::string run_block =
      TraceBlock(log, absl::StrCat("[RunPodSandbox pod=", kNamespace, "/obs] trace: RunPodSandbox OK in "));
  EXPECT_THAT(run_block, HasSubstr("/containers/create?name=k8s_POD_obs_dsobs_"));
  EXPECT_THAT(run_block, HasSubstr("  cni ADD bridge (network dsobsnet) -> ok in "));
  EXPECT_THAT(run_block, HasSubstr("  cni ADD loopback (network dsobsnet) -> ok in "));
  const std::string create_block = TraceBlock(
      log, absl::StrCat("[CreateContainer pod=", pod_id.substr(0, 12), " container=app] trace: CreateContainer OK in "));
  EXPECT_THAT(create_block, HasSubstr("API_TOKEN=<redacted>"));
  // Log lines of a call carry its context.
  EXPECT_THAT(log, HasSubstr(absl::StrCat("[StopContainer container=", container_id.substr(0, 12), "] ")));
  absl::StatusOr<std::string> header = shim::EncodeRegistryAuth(pull.auth());
  ASSERT_TRUE(header.ok());
  for (const std::string& secret : {testenv::AuthPassword(), *header, std::string("env-secret-value")}) {
    EXPECT_THAT(log, Not(HasSubstr(secret)));
  }
}

TEST_F(ObservabilityIntegration, HealthzIs503WhileDockerDoesNotAnswer) {
  const std::string metrics_address = Start("unix://" + (dir_ / "no-docker.sock").string());
  ASSERT_FALSE(metrics_address.empty());
  auto health = Get(metrics_address, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 503);
  EXPECT_THAT(health->body, HasSubstr("Docker does not answer: "));
  EXPECT_THAT(health->body, HasSubstr("no-docker.sock"));
  auto scraped = Get(metrics_address, "/metrics");
  ASSERT_TRUE(scraped.ok());
  EXPECT_EQ(scraped->status, 200);
  EXPECT_THAT(scraped->body, HasSubstr("dockershim_build_info{version=\""));
}

TEST_F(ObservabilityIntegration, BadMetricsAddressExitsTwo) {
  for (const char* bad : {"localhost:9090", "127.0.0.1:99999", "9090"}) {
    Daemon d(dir_, Args(testenv::DockerEndpoint(), bad));
    auto ended = d.Wait(std::chrono::seconds(10));
    ASSERT_TRUE(ended.has_value()) << bad;
    EXPECT_EQ(ended->code, 2) << bad;
    EXPECT_THAT(ended->stderr_text, HasSubstr("--metrics-bind-addr: ")) << bad;
    EXPECT_THAT(ended->stderr_text, HasSubstr("is not host:port")) << bad;
  }
}

}  // namespace
