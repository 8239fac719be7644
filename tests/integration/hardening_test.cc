// The real binary on real Docker against hostile or careless clients: who may connect
// to the CRI socket, an oversized request, malformed and wrong-kind IDs, and registry
// credentials that must reach neither an error nor the log.
#include <grp.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "api/cri.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/daemon.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using testenv::Daemon;

constexpr char kNamespace[] = "dshard-sweep";

class HardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dshard-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    socket_ = (dir_ / "shim.sock").string();
  }
  void TearDown() override {
    testenv::Sh(absl::StrCat("docker -H ", testenv::DockerEndpoint(), " ps -aq --filter name=_", kNamespace,
                             "_ | xargs -r docker -H ", testenv::DockerEndpoint(), " rm -f"));
    fs::remove_all(dir_);
  }

  std::vector<std::string> ServeArgs(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--container-runtime-endpoint", "unix://" + socket_, "--docker-endpoint",
                                     testenv::DockerEndpoint(), "--network-plugin", "docker", "--root-directory",
                                     (dir_ / "root").string(), "--log-level", "debug",
                                     "--pod-infra-container-image", testenv::PauseImage()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  testenv::CriClient Client() {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    return testenv::CriClient(socket_, std::chrono::seconds(60), args);
  }
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return ctx;
  }
  // Stops the daemon with SIGTERM and returns everything it logged.
  static std::string StopAndLog(Daemon& d) {
    d.Signal(SIGTERM);
    auto e = d.Wait(std::chrono::seconds(20));
    EXPECT_TRUE(e.has_value()) << "dockershim did not exit after SIGTERM";
    if (!e) return d.Stderr();
    EXPECT_EQ(e->code, 0) << e->stderr_text;
    return e->stderr_text;
  }

  fs::path dir_;
  std::string socket_;
};

TEST_F(HardeningTest, TheCriSocketIsOwnerAndGroupOnly) {
  const struct group* daemon_group = ::getgrnam("daemon");
  ASSERT_NE(daemon_group, nullptr) << "the test needs the \"daemon\" group of /etc/group";
  const gid_t by_name = daemon_group->gr_gid;
  const std::vector<std::pair<std::vector<std::string>, gid_t>> cases = {
      {{}, getegid()}, {{"--cri-socket-group", "daemon"}, by_name}, {{"--cri-socket-group", "4242"}, 4242}};
  for (const auto& [flags, gid] : cases) {
    SCOPED_TRACE(flags.empty() ? "default group" : flags[1]);
    Daemon d(dir_, ServeArgs(flags));
    ASSERT_TRUE(testenv::WaitForSocket(socket_)) << d.Stderr();
    const struct stat st = testenv::SocketOnceOpenedToItsGroup(socket_, gid);
    EXPECT_EQ(st.st_mode & 07777, 0660u);
    EXPECT_EQ(st.st_uid, geteuid());
    EXPECT_EQ(st.st_gid, gid);
    v1::VersionResponse version;
    EXPECT_TRUE(Client().runtime().Version(Ctx().get(), v1::VersionRequest(), &version).ok());
    StopAndLog(d);
  }
}

TEST_F(HardeningTest, AnUnknownSocketGroupIsAStartupError) {
  Daemon d(dir_, ServeArgs({"--cri-socket-group", "no-such-group-dshard"}));
  auto e = d.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(e.has_value()) << "dockershim should have refused to start";
  EXPECT_EQ(e->code, 2);
  EXPECT_EQ(e->stderr_text.rfind("dockershim: --cri-socket-group: ", 0), 0u) << e->stderr_text;
  EXPECT_NE(e->stderr_text.find("no-such-group-dshard"), std::string::npos) << e->stderr_text;
  EXPECT_FALSE(fs::exists(socket_));
}

TEST_F(HardeningTest, AnOversizedRequestIsRefusedAndTheShimGoesOn) {
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(testenv::WaitForSocket(socket_)) << d.Stderr();
  testenv::CriClient cri = Client();
  v1::ListContainersRequest oversized;
  (*oversized.mutable_filter()->mutable_label_selector())["k"] = std::string(16 << 20, 'x');
  v1::ListContainersResponse listed;
  grpc::Status s = cri.runtime().ListContainers(Ctx().get(), oversized, &listed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_FALSE(s.error_message().empty());
  // The kubelet's largest: just under 16 MiB is served, and so is what comes next.
  v1::ListContainersRequest large;
  (*large.mutable_filter()->mutable_label_selector())["k"] = std::string((16 << 20) - 64, 'x');
  s = cri.runtime().ListContainers(Ctx().get(), large, &listed);
  EXPECT_TRUE(s.ok()) << s.error_message();
  v1::VersionResponse version;
  EXPECT_TRUE(cri.runtime().Version(Ctx().get(), v1::VersionRequest(), &version).ok());
  StopAndLog(d);
}

// A request with `id` in its ID field, and the codes it may answer.
struct IdCase {
  const char* rpc;
  std::set<grpc::StatusCode> allowed;
  std::function<grpc::Status(v1::RuntimeService::Stub&, v1::ImageService::Stub&, const std::string& id)> call;
};

template <typename Req, typename Resp, typename Stub>
grpc::Status Unary(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), Stub& stub, const Req& req) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  Resp resp;
  return (stub.*method)(ctx.get(), req, &resp);
}

// PullImage is left out: "a/b" is a valid reference, and pulling it would leave 127.0.0.1.
std::vector<IdCase> IdCases() {
  using C = grpc::StatusCode;
  using RS = v1::RuntimeService::Stub;
  using IS = v1::ImageService::Stub;
  const std::set<C> lookup = {C::NOT_FOUND, C::INVALID_ARGUMENT};
  const std::set<C> idempotent = {C::OK, C::NOT_FOUND, C::INVALID_ARGUMENT};
  std::vector<IdCase> cases;
  const auto add = [&](const char* rpc, std::set<C> allowed, auto call) { cases.push_back({rpc, allowed, call}); };
  add("ContainerStatus", lookup, [](RS& r, IS&, const std::string& id) {
    v1::ContainerStatusRequest q;
    q.set_container_id(id);
    return Unary(&RS::ContainerStatus, r, q);
  });
  add("StartContainer", lookup, [](RS& r, IS&, const std::string& id) {
    v1::StartContainerRequest q;
    q.set_container_id(id);
    return Unary(&RS::StartContainer, r, q);
  });
  add("StopContainer", idempotent, [](RS& r, IS&, const std::string& id) {
    v1::StopContainerRequest q;
    q.set_container_id(id);
    return Unary(&RS::StopContainer, r, q);
  });
  add("RemoveContainer", idempotent, [](RS& r, IS&, const std::string& id) {
    v1::RemoveContainerRequest q;
    q.set_container_id(id);
    return Unary(&RS::RemoveContainer, r, q);
  });
  add("ExecSync", lookup, [](RS& r, IS&, const std::string& id) {
    v1::ExecSyncRequest q;
    q.set_container_id(id);
    q.add_cmd("true");
    return Unary(&RS::ExecSync, r, q);
  });
  add("Exec", lookup, [](RS& r, IS&, const std::string& id) {
    v1::ExecRequest q;
    q.set_container_id(id);
    q.add_cmd("true");
    q.set_stdout(true);
    return Unary(&RS::Exec, r, q);
  });
  add("ContainerStats", lookup, [](RS& r, IS&, const std::string& id) {
    v1::ContainerStatsRequest q;
    q.set_container_id(id);
    return Unary(&RS::ContainerStats, r, q);
  });
  add("UpdateContainerResources", lookup, [](RS& r, IS&, const std::string& id) {
    v1::UpdateContainerResourcesRequest q;
    q.set_container_id(id);
    q.mutable_linux()->set_cpu_shares(512);
    return Unary(&RS::UpdateContainerResources, r, q);
  });
  add("ReopenContainerLog", lookup, [](RS& r, IS&, const std::string& id) {
    v1::ReopenContainerLogRequest q;
    q.set_container_id(id);
    return Unary(&RS::ReopenContainerLog, r, q);
  });
  add("PodSandboxStatus", lookup, [](RS& r, IS&, const std::string& id) {
    v1::PodSandboxStatusRequest q;
    q.set_pod_sandbox_id(id);
    return Unary(&RS::PodSandboxStatus, r, q);
  });
  add("StopPodSandbox", idempotent, [](RS& r, IS&, const std::string& id) {
    v1::StopPodSandboxRequest q;
    q.set_pod_sandbox_id(id);
    return Unary(&RS::StopPodSandbox, r, q);
  });
  add("RemovePodSandbox", idempotent, [](RS& r, IS&, const std::string& id) {
    v1::RemovePodSandboxRequest q;
    q.set_pod_sandbox_id(id);
    return Unary(&RS::RemovePodSandbox, r, q);
  });
  add("PodSandboxStats", lookup, [](RS& r, IS&, const std::string& id) {
    v1::PodSandboxStatsRequest q;
    q.set_pod_sandbox_id(id);
    return Unary(&RS::PodSandboxStats, r, q);
  });
  add("PortForward", lookup, [](RS& r, IS&, const std::string& id) {
    v1::PortForwardRequest q;
    q.set_pod_sandbox_id(id);
    q.add_port(80);
    return Unary(&RS::PortForward, r, q);
  });
  add("CreateContainer", lookup, [](RS& r, IS&, const std::string& id) {
    v1::CreateContainerRequest q;
    q.set_pod_sandbox_id(id);
    q.mutable_config()->mutable_metadata()->set_name("app");
    q.mutable_config()->mutable_image()->set_image(testenv::BusyboxImage());
    return Unary(&RS::CreateContainer, r, q);
  });
  add("RunPodSandbox (as the pod's name)", {C::INVALID_ARGUMENT}, [](RS& r, IS&, const std::string& id) {
    v1::RunPodSandboxRequest q;
    q.mutable_config()->mutable_metadata()->set_name(id);
    q.mutable_config()->mutable_metadata()->set_namespace_(kNamespace);
    q.mutable_config()->mutable_metadata()->set_uid("uid-sweep");
    q.mutable_config()->mutable_linux();
    return Unary(&RS::RunPodSandbox, r, q);
  });
  add("ImageStatus", {C::OK, C::INVALID_ARGUMENT}, [](RS&, IS& i, const std::string& id) {
    v1::ImageStatusRequest q;
    q.mutable_image()->set_image(id);
    return Unary(&IS::ImageStatus, i, q);
  });
  add("RemoveImage", {C::OK, C::INVALID_ARGUMENT}, [](RS&, IS& i, const std::string& id) {
    v1::RemoveImageRequest q;
    q.mutable_image()->set_image(id);
    return Unary(&IS::RemoveImage, i, q);
  });
  return cases;
}

TEST_F(HardeningTest, NonsenseIdsGetAClearCodeFromRealDocker) {
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(testenv::WaitForSocket(socket_)) << d.Stderr();
  testenv::CriClient cri = Client();
  const std::vector<std::pair<const char*, std::string>> ids = {{"a path", "../../../../etc/passwd"},
                                                                {"a slash", "a/b"},
                                                                {"a query", "?x"},
                                                                {"control characters", "id\n\r\t\x01\x7f"},
                                                                {"1 MB", std::string(1 << 20, 'x')}};
  for (const IdCase& c : IdCases()) {
    for (const auto& [what, id] : ids) {
      SCOPED_TRACE(absl::StrCat(c.rpc, " with ", what));
      const grpc::Status s = c.call(cri.runtime(), cri.images(), id);
      EXPECT_TRUE(c.allowed.contains(s.error_code())) << s.error_code() << ": " << s.error_message().substr(0, 300);
      if (!s.ok()) {
        EXPECT_FALSE(s.error_message().empty());
      }
      EXPECT_LT(s.error_message().size(), 8192u);
    }
  }
  EXPECT_TRUE(fs::exists("/etc/passwd"));
  EXPECT_EQ(testenv::Sh(absl::StrCat("docker -H ", testenv::DockerEndpoint(), " ps -aq --filter name=_", kNamespace, "_")),
            "")
      << "a refused RunPodSandbox left a container";
  StopAndLog(d);  // and the shim is still there to stop
}

TEST_F(HardeningTest, IdsOfTheWrongKindLeaveThePodAlone) {
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(testenv::WaitForSocket(socket_)) << d.Stderr();
  testenv::CriClient cri = Client();
  v1::PodSandboxConfig pod;
  pod.mutable_metadata()->set_name("wrongkind");
  pod.mutable_metadata()->set_namespace_(kNamespace);
  pod.mutable_metadata()->set_uid(dir_.filename().string());
  pod.mutable_linux();
  std::string pod_id;
  grpc::Status s = cri.RunPodSandbox(pod, &pod_id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::ContainerConfig app;
  app.mutable_metadata()->set_name("app");
  app.mutable_image()->set_image(testenv::BusyboxImage());
  app.add_command("sleep");
  app.add_command("300");
  std::string container_id;
  s = cri.CreateAndStartContainer(pod_id, pod, app, &container_id);
  ASSERT_TRUE(s.ok()) << s.error_message();

  for (const IdCase& c : IdCases()) {
    const std::string rpc = c.rpc;
    if (rpc.starts_with("RunPodSandbox") || rpc == "ImageStatus" || rpc == "RemoveImage") continue;
    // A sandbox RPC gets the container, a container RPC the sandbox.
    const bool sandbox_rpc = rpc.find("PodSandbox") != std::string::npos || rpc == "PortForward" || rpc == "CreateContainer";
    const std::string wrong = sandbox_rpc ? container_id : pod_id;
    SCOPED_TRACE(rpc);
    s = c.call(cri.runtime(), cri.images(), wrong);
    // No sandbox has a container's ID: Stop and Remove of one are idempotent OKs; any
    // other answer says NOT_FOUND, or INVALID_ARGUMENT for a sandbox's ID to
    // StopContainer/RemoveContainer. Either way both keep running (checked below).
    const bool idempotent = rpc == "StopPodSandbox" || rpc == "RemovePodSandbox";
    if (idempotent && s.ok()) continue;
    EXPECT_TRUE(s.error_code() == grpc::StatusCode::NOT_FOUND || s.error_code() == grpc::StatusCode::INVALID_ARGUMENT)
        << s.error_code() << ": " << s.error_message();
    EXPECT_FALSE(s.error_message().empty());
  }
  // Both still run.
  const std::string states = testenv::Sh(absl::StrCat("docker -H ", testenv::DockerEndpoint(),
                                                      " inspect -f '{{.State.Status}}' ", pod_id, " ", container_id));
  EXPECT_EQ(states, "running\nrunning\n");
  StopAndLog(d);
}

TEST_F(HardeningTest, NoCredentialInErrorsOrTheDebugLog) {
  Daemon d(dir_, ServeArgs());
  ASSERT_TRUE(testenv::WaitForSocket(socket_)) << d.Stderr();
  testenv::CriClient cri = Client();
  const std::string password = "Wr0ng-Pw-dshard-5b2e";
  const std::string identity_token = "IdTok-dshard-0c7d91";
  const std::string registry_token = "RegTok-dshard-e4a8f2";
  v1::AuthConfig wrong_password;
  wrong_password.set_username(testenv::AuthUser());
  wrong_password.set_password(password);
  v1::AuthConfig auth_field;
  auth_field.set_auth(absl::Base64Escape(testenv::AuthUser() + ":" + password));
  v1::AuthConfig identity;
  identity.set_username(testenv::AuthUser());
  identity.set_identity_token(identity_token);
  v1::AuthConfig registry;
  registry.set_registry_token(registry_token);
  const std::vector<std::pair<const char*, v1::AuthConfig>> configs = {{"a wrong password", wrong_password},
                                                                       {"an auth field", auth_field},
                                                                       {"an identity token", identity},
                                                                       {"a registry token", registry}};
  const std::vector<std::string> secrets = {password, identity_token, registry_token, auth_field.auth()};
  for (const auto& [what, auth] : configs) {
    SCOPED_TRACE(what);
    v1::PullImageRequest pull;
    pull.mutable_image()->set_image(testenv::AuthRegistry() + "/private/busybox:latest");
    *pull.mutable_auth() = auth;
    v1::PullImageResponse pulled;
    grpc::Status s = cri.images().PullImage(Ctx().get(), pull, &pulled);
    ASSERT_FALSE(s.ok()) << "the registry should refuse these credentials";
    EXPECT_NE(s.error_message().find(testenv::AuthRegistry()), std::string::npos) << s.error_message();
    for (const std::string& secret : secrets) EXPECT_EQ(s.error_message().find(secret), std::string::npos) << s.error_message();
  }
  // A registry that cannot be reached, with credentials given.
  v1::PullImageRequest unreachable;
  unreachable.mutable_image()->set_image("127.0.0.1:1/private/busybox:latest");
  *unreachable.mutable_auth() = wrong_password;
  v1::PullImageResponse not_pulled;
  grpc::Status s = cri.images().PullImage(Ctx().get(), unreachable, &not_pulled);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_NE(s.error_message().find("registry 127.0.0.1:1 cannot be reached"), std::string::npos) << s.error_message();
  EXPECT_EQ(s.error_message().find(password), std::string::npos) << s.error_message();
  const std::string log = StopAndLog(d);
  EXPECT_NE(log.find("PullImage failed"), std::string::npos) << "the debug log should have the calls";
  for (const std::string& secret : secrets) EXPECT_EQ(log.find(secret), std::string::npos) << secret << " is in the log";
}

}  // namespace
