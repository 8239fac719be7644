// `dockershim migrate` on a systemd node, the way an operator runs it: first without
// cri-dockerd (it says so and changes nothing), then with cri-dockerd's units as its
// packaging and install guide lay them out (cri-docker.service with a drop-in of flags
// and an Environment= variable, cri-docker.socket on %t/cri-dockerd.sock), pods started
// through its socket, the switch to dockershim and back, each checked over the same
// socket path. Real cri-dockerd cannot be built here: the units run this build's
// dockershim under cri-dockerd's flag names instead, in a mount namespace of its own
// with a private /var/log/pods, so that the node's log paths are what cri-dockerd leaves
// there (links to Docker's json logs, made by the test as cri-dockerd does at
// StartContainer) and the stand-in never touches them.
//
// It installs, starts and removes units of the node's systemd: it runs only in
// scripts/vm.sh's throw-away guest, where scripts/vm-integration.sh sets DOCKERSHIM_TEST_VM=1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/cri.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/daemon.h"
#include "tests/integration/shell.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using namespace std::chrono_literals;
using testenv::Trimmed;
using testenv::WaitUntil;
using ::testing::HasSubstr;

constexpr char kCriSocket[] = "/run/cri-dockerd.sock";
constexpr char kUnitDir[] = "/etc/systemd/system";
constexpr char kStandIn[] = "/usr/local/bin/cri-dockerd";
constexpr char kStandInConfig[] = "/etc/cri-dockerd-stand-in.toml";
constexpr char kConfig[] = "/etc/dockershim/config.toml";
constexpr char kDropIn[] = "/etc/systemd/system/dockershim.socket.d/50-cri-dockerd-socket.conf";
constexpr char kNamespace[] = "dsmigrate";
constexpr char kBridge[] = "dsmig0";

std::string State(const std::string& unit) {
  return Trimmed(testenv::Sh("systemctl is-enabled " + unit)) + "/" + Trimmed(testenv::Sh("systemctl is-active " + unit));
}

struct Command {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Command Migrate(const std::string& direction) {
  const std::string out =
      testenv::Sh(absl::StrCat("{ ", DOCKERSHIM_BINARY, " migrate ", direction, " 2>&1; echo \"exit=$?\"; }"));
  Command c;
  const size_t at = out.rfind("exit=");
  c.output = out.substr(0, at);
  if (at != std::string::npos) absl::SimpleAtoi(Trimmed(out.substr(at + 5)), &c.exit_code);
  return c;
}

class MigrateNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (testenv::Get("DOCKERSHIM_TEST_VM", "") != "1")
      GTEST_SKIP() << "installs and switches the node's systemd units: only in scripts/vm.sh's guest "
                      "(scripts/vm-integration.sh sets DOCKERSHIM_TEST_VM=1)";
    ASSERT_EQ(Trimmed(testenv::Sh("cat /proc/1/comm")), "systemd");
    if (fs::exists(fs::path(kUnitDir) / "cri-docker.service") || fs::exists(fs::path(kUnitDir) / "dockershim.service"))
      Cleanup();  // an aborted run's
    dir_ = fs::path("/var/tmp") / absl::StrCat("dsmigrate-", ::getpid());
    fs::create_directories(dir_ / "net.d");
  }
  void TearDown() override {
    if (!dir_.empty()) Cleanup();
  }

  // What a failed or aborted run may have left, and what a passed one did.
  void Cleanup() {
    testenv::Sh("systemctl disable --now cri-docker.socket cri-docker.service dockershim.socket dockershim.service");
    testenv::Sh(absl::StrCat("docker ps -aq --filter label=io.kubernetes.pod.namespace=", kNamespace,
                             " | xargs -r docker rm -f"));
    testenv::Sh(absl::StrCat("rm -rf ", kUnitDir, "/cri-docker.* ", kUnitDir, "/dockershim.* ", kStandIn, " ",
                             kStandInConfig, " /etc/dockershim /var/lib/dockershim /var/lib/cri-dockerd",
                             " /var/lib/cri-dockerd-stand-in /var/log/pods/", kNamespace, "_*"));
    testenv::Sh("systemctl daemon-reload; systemctl reset-failed");
    testenv::Sh(absl::StrCat("ip link del ", kBridge));
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // dockershim's units as its package installs them (examples/systemd), running this
  // build; the package starts the socket.
  void InstallDockershim() {
    for (const char* unit : {"dockershim.service", "dockershim.socket"}) {
      const std::string text = testenv::ReadFile(fs::path(DOCKERSHIM_SOURCE_DIR) / "examples/systemd" / unit);
      ASSERT_FALSE(text.empty()) << unit;
      std::ofstream(fs::path(kUnitDir) / unit) << absl::StrReplaceAll(text, {{"/usr/bin/dockershim", DOCKERSHIM_BINARY}});
    }
    ASSERT_TRUE(testenv::ShOk("systemctl daemon-reload && systemctl enable --now dockershim.socket"));
  }

  // cri-dockerd as its install guide lays it out: the binary in /usr/local/bin, the
  // packaged units in /etc/systemd/system; the flags in a drop-in.
  void InstallCriDockerd() {
    ASSERT_TRUE(testenv::ShOk("getent group docker")) << "cri-docker.socket's SocketGroup";
    // Its checkpoints (dockershim's format) apart from dockershim's and from cri-dockerd's
    // directory: the pods come to dockershim as a real cri-dockerd's would, with no
    // checkpoint of dockershim's to read their IPs from.
    std::ofstream(kStandInConfig) << "root-directory = \"/var/lib/cri-dockerd-stand-in\"\n";
    std::ofstream(kStandIn) << absl::StrCat(
        "#!/bin/sh\n"
        "# A stand-in for cri-dockerd: dockershim under cri-dockerd's flags, with a /var/log/pods\n"
        "# of its own (mounts from the node still reach it: Docker's network namespaces).\n"
        "mkdir -p /var/log/pods\n"
        "exec unshare --mount --propagation slave /bin/sh -c 'mount -t tmpfs stand-in /var/log/pods && exec \"$0\" \"$@\"' ",
        DOCKERSHIM_BINARY, " --config ", kStandInConfig, " \"$@\"\n");
    fs::permissions(kStandIn, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read |
                                  fs::perms::group_exec | fs::perms::others_exec);
    std::ofstream(fs::path(kUnitDir) / "cri-docker.service")
        << "[Unit]\nDescription=CRI Interface for Docker Application Container Engine\n"
           "After=network-online.target firewalld.service docker.service\nWants=network-online.target\n"
           "Requires=cri-docker.socket\n\n[Service]\nType=notify\n"
           "ExecStart=/usr/local/bin/cri-dockerd --container-runtime-endpoint fd://\n"
           "ExecReload=/bin/kill -s HUP $MAINPID\nTimeoutSec=0\nRestartSec=2\nRestart=always\n"
           "StartLimitBurst=3\nStartLimitInterval=60s\nLimitNOFILE=infinity\nLimitNPROC=infinity\n"
           "LimitCORE=infinity\nTasksMax=infinity\nDelegate=yes\nKillMode=process\n\n"
           "[Install]\nWantedBy=multi-user.target\n";
    std::ofstream(fs::path(kUnitDir) / "cri-docker.socket")
        << "[Unit]\nDescription=CRI Docker Socket for the API\nPartOf=cri-docker.service\n\n"
           "[Socket]\nListenStream=%t/cri-dockerd.sock\nSocketMode=0660\nSocketUser=root\nSocketGroup=docker\n\n"
           "[Install]\nWantedBy=sockets.target\n";
    fs::create_directories(fs::path(kUnitDir) / "cri-docker.service.d");
    std::ofstream(fs::path(kUnitDir) / "cri-docker.service.d/10-flags.conf") << absl::StrCat(
        "[Service]\n"
        "Environment=\"CNI_FLAGS=--cni-bin-dir=", testenv::CniBinDir(), " --cni-conf-dir=", (dir_ / "net.d").string(),
        " --cni-cache-dir=", (dir_ / "cache").string(),
        "\"\n"
        "ExecStart=\n"
        "ExecStart=/usr/local/bin/cri-dockerd --container-runtime-endpoint fd:// --network-plugin=cni $CNI_FLAGS \\\n"
        "  --docker-endpoint=",
        testenv::DockerEndpoint(), " --pod-infra-container-image ", testenv::PauseImage(), "\n");
    std::ofstream(dir_ / "net.d/10-dsmigrate.conflist") << absl::StrCat(
        R"({"cniVersion": "1.0.0", "name": "dsmigrate", "plugins": [{"type": "bridge", "bridge": ")", kBridge,
        R"(", "isGateway": true, "ipMasq": false, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.240.0/24"}]], "dataDir": ")",
        (dir_ / "ipam").string(), R"("}}]})");
    ASSERT_TRUE(testenv::ShOk("systemctl daemon-reload && systemctl enable --now cri-docker.socket cri-docker.service"))
        << testenv::Sh("journalctl -u cri-docker.service --no-pager -n 30");
  }

  v1::PodSandboxConfig Pod(const std::string& name, bool host_network) {
    v1::PodSandboxConfig pod;
    pod.mutable_metadata()->set_name(name);
    pod.mutable_metadata()->set_namespace_(kNamespace);
    pod.mutable_metadata()->set_uid(absl::StrCat(name, "-", ::getpid()));
    pod.set_log_directory(absl::StrCat("/var/log/pods/", kNamespace, "_", name, "_", name, "-", ::getpid()));
    // As the kubelet sends them: each container its own PID namespace.
    v1::NamespaceOption* namespaces = pod.mutable_linux()->mutable_security_context()->mutable_namespace_options();
    namespaces->set_network(host_network ? v1::NODE : v1::POD);
    namespaces->set_pid(v1::CONTAINER);
    return pod;
  }

  std::string PodIp(testenv::CriClient& cri, const std::string& pod_id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(pod_id);
    v1::PodSandboxStatusResponse resp;
    grpc::Status s = cri.runtime().PodSandboxStatus(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.status().network().ip();
  }

  // The IDs of the running containers of `pods`, as the runtime on the socket lists them.
  std::vector<std::string> Running(testenv::CriClient& cri, const std::vector<std::string>& pods) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    v1::ListContainersRequest req;
    req.mutable_filter()->mutable_state()->set_state(v1::CONTAINER_RUNNING);
    v1::ListContainersResponse resp;
    grpc::Status s = cri.runtime().ListContainers(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> ids;
    for (const v1::Container& c : resp.containers())
      if (std::find(pods.begin(), pods.end(), c.pod_sandbox_id()) != pods.end()) ids.push_back(c.id());
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  // The container's main process writes `line` (its stdout is what Docker logs).
  void Say(testenv::CriClient& cri, const std::string& container_id, const std::string& line) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    v1::ExecSyncRequest req;
    req.set_container_id(container_id);
    for (const char* part : {"sh", "-c"}) req.add_cmd(part);
    req.add_cmd("echo " + line + " >/proc/1/fd/1");
    req.set_timeout(30);
    v1::ExecSyncResponse resp;
    grpc::Status s = cri.runtime().ExecSync(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(resp.exit_code(), 0) << resp.stderr();
  }

  std::string DockerLogPath(const std::string& container_id) {
    return Trimmed(testenv::Sh("docker inspect -f '{{.LogPath}}' " + container_id));
  }

  fs::path dir_;
};

// One test, for the VM's time: each install and removal of units costs daemon-reloads.
TEST_F(MigrateNodeTest, RefusesWithoutCriDockerdThenSwitchesToDockershimAndBack) {
  InstallDockershim();
  // --- cri-dockerd not installed: said so, nothing changed ---
  const std::string socket = State("dockershim.socket"), service = State("dockershim.service");
  for (const char* direction : {"from-cri-dockerd", "to-cri-dockerd"}) {
    const Command c = Migrate(direction);
    EXPECT_EQ(c.exit_code, 1) << c.output;
    EXPECT_THAT(c.output, HasSubstr("cri-dockerd is not installed: no cri-docker.service or cri-dockerd.service in "
                                    "/etc/systemd/system"));
  }
  EXPECT_EQ(State("dockershim.socket"), socket);
  EXPECT_EQ(State("dockershim.service"), service);
  EXPECT_FALSE(fs::exists(kConfig));
  EXPECT_FALSE(fs::exists(kDropIn));
  EXPECT_FALSE(fs::exists("/var/lib/dockershim/migrate-state.json"));

  InstallCriDockerd();
  testenv::CriClient cri(kCriSocket, 60s);

  // Pods through cri-dockerd: one on the CNI network, one on the node's.
  const v1::PodSandboxConfig web = Pod("web", false), hostnet = Pod("hostnet", true);
  std::string web_id, hostnet_id, app_id, host_app_id;
  ASSERT_TRUE(cri.RunPodSandbox(web, &web_id).ok());
  ASSERT_TRUE(cri.RunPodSandbox(hostnet, &hostnet_id).ok());
  v1::ContainerConfig app = testenv::BusyboxContainer("app", {"sh", "-c", "echo before-the-switch; exec sleep 3600"});
  app.set_log_path("app/0.log");
  app.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_pid(v1::CONTAINER);
  grpc::Status s = cri.CreateAndStartContainer(web_id, web, app, &app_id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = cri.CreateAndStartContainer(hostnet_id, hostnet, testenv::BusyboxContainer("host-app", {"sleep", "3600"}),
                                  &host_app_id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string ip = PodIp(cri, web_id);
  ASSERT_TRUE(absl::StartsWith(ip, "10.99.240.")) << ip;
  const std::vector<std::string> running = Running(cri, {web_id, hostnet_id});
  ASSERT_EQ(running.size(), 2u);

  // The log path as cri-dockerd leaves it: a link to Docker's json log.
  const std::string log_path = web.log_directory() + "/app/0.log";
  const std::string docker_log = DockerLogPath(app_id);
  ASSERT_FALSE(docker_log.empty());
  fs::create_directories(fs::path(log_path).parent_path());
  fs::create_symlink(docker_log, log_path);
  ASSERT_TRUE(WaitUntil([&] { return absl::StrContains(testenv::ReadFile(log_path), "before-the-switch"); }, 10s));

  // --- to dockershim ---
  const Command from = Migrate("from-cri-dockerd");
  std::cout << from.output;
  ASSERT_EQ(from.exit_code, 0) << from.output << testenv::Sh("journalctl -u dockershim.service --no-pager -n 40");
  EXPECT_THAT(from.output, HasSubstr("Every pod, its IP and every running container came through"));
  for (absl::string_view line : absl::StrSplit(from.output, '\n'))
    if (absl::StrContains(line, "The switch took")) std::cout << "[ figures  ] to dockershim: " << line << "\n";
  EXPECT_EQ(State("cri-docker.socket"), "disabled/inactive");
  EXPECT_EQ(State("cri-docker.service"), "disabled/inactive");
  EXPECT_EQ(State("dockershim.socket"), "enabled/active");
  EXPECT_EQ(State("dockershim.service"), "enabled/active");
  const std::string config = testenv::ReadFile(kConfig);
  EXPECT_THAT(config, HasSubstr("root-directory = \"/var/lib/dockershim\"\n"));
  EXPECT_THAT(config, HasSubstr(absl::StrCat("docker-endpoint = \"", testenv::DockerEndpoint(), "\"")));
  EXPECT_THAT(config, HasSubstr(absl::StrCat("cni-conf-dir = \"", (dir_ / "net.d").string(), "\"")));
  EXPECT_TRUE(fs::exists(kDropIn));

  // The same socket path, now dockershim's: the same pods, IP and containers.
  EXPECT_EQ(Trimmed(testenv::Sh("systemctl show -p Listen --value dockershim.socket")), "/run/cri-dockerd.sock (Stream)");
  testenv::CriClient ours(kCriSocket, 60s);
  EXPECT_EQ(PodIp(ours, web_id), ip);
  EXPECT_EQ(Running(ours, {web_id, hostnet_id}), running);
  // dockershim made the link a CRI file of its own, history included, and copies on.
  ASSERT_TRUE(WaitUntil([&] { return fs::is_regular_file(fs::symlink_status(log_path)); }, 10s));
  Say(ours, app_id, "with-dockershim");
  EXPECT_TRUE(WaitUntil([&] { return absl::StrContains(testenv::ReadFile(log_path), "stdout F with-dockershim"); }, 10s))
      << testenv::ReadFile(log_path);
  EXPECT_THAT(testenv::ReadFile(log_path), HasSubstr("stdout F before-the-switch"));

  // Again: every step is done (systemd's timestamps say dockershim started after its
  // files changed), so nothing stops or starts.
  const Command again = Migrate("from-cri-dockerd");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  for (absl::string_view line : absl::StrSplit(again.output, '\n'))
    EXPECT_FALSE(absl::StartsWith(line, "  now ") && !absl::StrContains(line, "check over")) << again.output;

  // --- and back ---
  const Command to = Migrate("to-cri-dockerd");
  std::cout << to.output;
  ASSERT_EQ(to.exit_code, 0) << to.output << testenv::Sh("journalctl -u cri-docker.service --no-pager -n 40");
  for (absl::string_view line : absl::StrSplit(to.output, '\n'))
    if (absl::StrContains(line, "The switch took")) std::cout << "[ figures  ] back to cri-dockerd: " << line << "\n";
  EXPECT_EQ(State("dockershim.socket"), "disabled/inactive");
  EXPECT_EQ(State("dockershim.service"), "disabled/inactive");
  EXPECT_EQ(State("cri-docker.socket"), "enabled/active");
  EXPECT_EQ(State("cri-docker.service"), "enabled/active");
  EXPECT_FALSE(fs::exists(kDropIn));
  EXPECT_TRUE(fs::exists(kConfig)) << "kept for a later switch";
  testenv::CriClient back(kCriSocket, 60s);
  EXPECT_EQ(PodIp(back, web_id), ip);
  EXPECT_EQ(Running(back, {web_id, hostnet_id}), running);
  // The log path is cri-dockerd's link again, and what the container says comes through it.
  ASSERT_TRUE(fs::is_symlink(fs::symlink_status(log_path)));
  EXPECT_EQ(fs::read_symlink(log_path), docker_log);
  Say(back, app_id, "with-cri-dockerd-again");
  EXPECT_TRUE(WaitUntil([&] { return absl::StrContains(testenv::ReadFile(log_path), "with-cri-dockerd-again"); }, 10s))
      << testenv::ReadFile(log_path);
}

}  // namespace
