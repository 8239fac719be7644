// Exec, Attach and PortForward of CriService on the fake Docker client: validated as
// the kubelet's streaming library validates them, then handed to the streaming
// server (a fake UrlIssuer here) with the full Docker ID.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "shim/cri_service.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";
constexpr char kAppName[] = "k8s_app_web_prod_uid-7_0";  // Docker's name of the "app" container

// Records what the service hands to the streaming server and answers with a URL
// that names the request's position.
class RecordingIssuer final : public streaming::UrlIssuer {
 public:
  absl::StatusOr<std::string> IssueUrl(streaming::Request req) override {
    std::lock_guard lock(mu_);
    if (!fail_with_.ok()) return fail_with_;
    requests_.push_back(std::move(req));
    return absl::StrCat("http://127.0.0.1:10010/req/", requests_.size());
  }
  std::vector<streaming::Request> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }
  void FailWith(absl::Status status) {
    std::lock_guard lock(mu_);
    fail_with_ = std::move(status);
  }

 private:
  std::mutex mu_;
  std::vector<streaming::Request> requests_;
  absl::Status fail_with_ = absl::OkStatus();
};

class StreamingRpcsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/streaming_rpcs_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
    ASSERT_NO_FATAL_FAILURE(BuildService(&issuer_));

    pod_.mutable_metadata()->set_name("web");
    pod_.mutable_metadata()->set_namespace_("prod");
    pod_.mutable_metadata()->set_uid("uid-7");
    pod_.mutable_linux();
    auto sandbox = RunPod(pod_);
    ASSERT_TRUE(sandbox.ok()) << sandbox.status();
    sandbox_id_ = *sandbox;
    auto container = RunContainer("app");
    ASSERT_TRUE(container.ok()) << container.status();
    container_id_ = *container;
  }
  void TearDown() override {
    service_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void BuildService(streaming::UrlIssuer* issuer) {
    service_.reset();
    Options o;
    o.root_directory = root_ + "/state";
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    o.streaming = issuer;
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());
  }
  absl::StatusOr<std::string> RunPod(const v1::PodSandboxConfig& config) {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = config;
    auto resp = service_->RunPodSandbox(ctx_, req);
    if (!resp.ok()) return resp.status();
    return resp->pod_sandbox_id();
  }
  // A started container in the pod.
  absl::StatusOr<std::string> RunContainer(const std::string& name) {
    v1::CreateContainerRequest create;
    create.set_pod_sandbox_id(sandbox_id_);
    create.mutable_config()->mutable_metadata()->set_name(name);
    create.mutable_config()->mutable_image()->set_image(kBusybox);
    *create.mutable_sandbox_config() = pod_;
    auto created = service_->CreateContainer(ctx_, create);
    if (!created.ok()) return created.status();
    v1::StartContainerRequest start;
    start.set_container_id(created->container_id());
    if (auto started = service_->StartContainer(ctx_, start); !started.ok()) return started.status();
    return created->container_id();
  }
  void StopContainer(const std::string& id) { ASSERT_TRUE(docker_.StopContainer(ctx_, id, {}).ok()); }

  static v1::ExecRequest ExecReq(const std::string& id, std::vector<std::string> cmd, bool tty, bool in, bool out,
                                 bool err) {
    v1::ExecRequest req;
    req.set_container_id(id);
    for (auto& part : cmd) req.add_cmd(part);
    req.set_tty(tty);
    req.set_stdin(in);
    req.set_stdout(out);
    req.set_stderr(err);
    return req;
  }
  static v1::AttachRequest AttachReq(const std::string& id, bool tty, bool in, bool out, bool err) {
    v1::AttachRequest req;
    req.set_container_id(id);
    req.set_tty(tty);
    req.set_stdin(in);
    req.set_stdout(out);
    req.set_stderr(err);
    return req;
  }
  static v1::PortForwardRequest ForwardReq(const std::string& id, std::vector<int32_t> ports = {}) {
    v1::PortForwardRequest req;
    req.set_pod_sandbox_id(id);
    for (int32_t port : ports) req.add_port(port);
    return req;
  }

  absl::StatusCode ExecCode(const v1::ExecRequest& req) { return service_->Exec(ctx_, req).status().code(); }
  absl::StatusCode AttachCode(const v1::AttachRequest& req) { return service_->Attach(ctx_, req).status().code(); }
  absl::StatusCode ForwardCode(const v1::PortForwardRequest& req) {
    return service_->PortForward(ctx_, req).status().code();
  }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
  std::string root_;
  FakeDockerClient docker_;
  FakeNetwork network_;
  RecordingIssuer issuer_;
  std::unique_ptr<CriService> service_;
  v1::PodSandboxConfig pod_;
  std::string sandbox_id_, container_id_;
};

TEST_F(StreamingRpcsTest, ExecHandsTheFullIdCommandAndFlagsToTheServer) {
  // Docker resolves other names for the container too (prefixes, names; the fake's IDs
  // share long prefixes, so a name here); the session needs the full ID.
  auto resp = service_->Exec(ctx_, ExecReq(kAppName, {"sh", "-c", "echo hi"}, true, true, true, false));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->url(), "http://127.0.0.1:10010/req/1");
  auto requests = issuer_.requests();
  ASSERT_THAT(requests, SizeIs(1));
  const auto* exec = std::get_if<streaming::ExecRequest>(&requests[0]);
  ASSERT_NE(exec, nullptr);
  EXPECT_EQ(exec->container_id, container_id_);
  EXPECT_THAT(exec->cmd, ElementsAre("sh", "-c", "echo hi"));
  EXPECT_TRUE(exec->tty);
  EXPECT_TRUE(exec->stdin);
  EXPECT_TRUE(exec->stdout);
  EXPECT_FALSE(exec->stderr);
}

TEST_F(StreamingRpcsTest, ExecRejectsWhatTheKubeletsLibraryRejects) {
  struct Case {
    const char* what;
    v1::ExecRequest req;
    const char* message;
  };
  const Case cases[] = {
      {"no container", ExecReq("", {"true"}, false, false, true, true), "container_id is required"},
      {"no command", ExecReq(container_id_, {}, false, false, true, true), "cmd is required"},
      {"tty and stderr", ExecReq(container_id_, {"true"}, true, false, true, true),
       "tty and stderr cannot both be true"},
      {"no stream", ExecReq(container_id_, {"true"}, false, false, false, false),
       "one of stdin, stdout, or stderr must be set"},
      {"tty alone", ExecReq(container_id_, {"true"}, true, false, false, false),
       "one of stdin, stdout, or stderr must be set"},
  };
  for (const Case& c : cases) {
    const absl::Status status = service_->Exec(ctx_, c.req).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.what << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.what;
  }
  EXPECT_THAT(issuer_.requests(), IsEmpty());
}

TEST_F(StreamingRpcsTest, ExecNeedsARunningKubernetesContainer) {
  EXPECT_EQ(ExecCode(ExecReq("0123456789ab", {"true"}, false, false, true, false)), absl::StatusCode::kNotFound);
  // The pod's infra container is no exec target.
  EXPECT_EQ(ExecCode(ExecReq(sandbox_id_, {"true"}, false, false, true, false)), absl::StatusCode::kNotFound);
  StopContainer(container_id_);
  const absl::Status stopped =
      service_->Exec(ctx_, ExecReq(container_id_, {"true"}, false, false, true, false)).status();
  EXPECT_EQ(stopped.code(), absl::StatusCode::kFailedPrecondition) << stopped;
  EXPECT_THAT(stopped.message(), HasSubstr("not running"));
  EXPECT_THAT(issuer_.requests(), IsEmpty());
}

TEST_F(StreamingRpcsTest, AttachHandsTheFullIdAndFlagsToTheServer) {
  auto resp = service_->Attach(ctx_, AttachReq(kAppName, false, true, true, true));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->url(), "http://127.0.0.1:10010/req/1");
  auto requests = issuer_.requests();
  ASSERT_THAT(requests, SizeIs(1));
  const auto* attach = std::get_if<streaming::AttachRequest>(&requests[0]);
  ASSERT_NE(attach, nullptr);
  EXPECT_EQ(attach->container_id, container_id_);
  EXPECT_FALSE(attach->tty);
  EXPECT_TRUE(attach->stdin);
  EXPECT_TRUE(attach->stdout);
  EXPECT_TRUE(attach->stderr);
}

TEST_F(StreamingRpcsTest, AttachRejectsBadRequestsAndContainersItCannotReach) {
  EXPECT_EQ(AttachCode(AttachReq("", false, false, true, false)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AttachCode(AttachReq(container_id_, true, false, true, true)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AttachCode(AttachReq(container_id_, false, false, false, false)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AttachCode(AttachReq("0123456789ab", false, false, true, false)), absl::StatusCode::kNotFound);
  EXPECT_EQ(AttachCode(AttachReq(sandbox_id_, false, false, true, false)), absl::StatusCode::kNotFound);
  StopContainer(container_id_);
  EXPECT_EQ(AttachCode(AttachReq(container_id_, false, false, true, false)), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(issuer_.requests(), IsEmpty());
}

TEST_F(StreamingRpcsTest, PortForwardHandsTheFullSandboxIdAndPortsToTheServer) {
  auto resp = service_->PortForward(ctx_, ForwardReq(sandbox_id_.substr(0, 63), {1, 8080, 65535}));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->url(), "http://127.0.0.1:10010/req/1");
  auto requests = issuer_.requests();
  ASSERT_THAT(requests, SizeIs(1));
  const auto* forward = std::get_if<streaming::PortForwardRequest>(&requests[0]);
  ASSERT_NE(forward, nullptr);
  EXPECT_EQ(forward->pod_sandbox_id, sandbox_id_);
  EXPECT_THAT(forward->ports, ElementsAre(1, 8080, 65535));
}

TEST_F(StreamingRpcsTest, PortForwardWithoutPortsIsFine) {
  // crictl and critest name no ports: SPDY clients name them per stream.
  ASSERT_TRUE(service_->PortForward(ctx_, ForwardReq(sandbox_id_)).ok());
  auto requests = issuer_.requests();
  ASSERT_THAT(requests, SizeIs(1));
  EXPECT_THAT(std::get<streaming::PortForwardRequest>(requests[0]).ports, IsEmpty());
}

TEST_F(StreamingRpcsTest, PortForwardRejectsPortsOutsideTheTcpRange) {
  for (int32_t port : {0, -1, 65536, 1 << 20}) {
    const absl::Status status = service_->PortForward(ctx_, ForwardReq(sandbox_id_, {80, port})).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << port << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("port ", port))) << port;
  }
  EXPECT_THAT(issuer_.requests(), IsEmpty());
}

TEST_F(StreamingRpcsTest, PortForwardNeedsAReadySandbox) {
  EXPECT_EQ(ForwardCode(ForwardReq("")), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ForwardCode(ForwardReq("0123456789ab")), absl::StatusCode::kNotFound);
  // An app container is not a sandbox.
  EXPECT_EQ(ForwardCode(ForwardReq(container_id_)), absl::StatusCode::kNotFound);
  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(sandbox_id_);
  ASSERT_TRUE(service_->StopPodSandbox(ctx_, stop).ok());
  const absl::Status stopped = service_->PortForward(ctx_, ForwardReq(sandbox_id_)).status();
  EXPECT_EQ(stopped.code(), absl::StatusCode::kFailedPrecondition) << stopped;
  EXPECT_THAT(stopped.message(), HasSubstr("not ready"));
  EXPECT_THAT(issuer_.requests(), IsEmpty());
}

TEST_F(StreamingRpcsTest, WithoutAStreamingServerEveryCallIsFailedPrecondition) {
  ASSERT_NO_FATAL_FAILURE(BuildService(nullptr));
  EXPECT_EQ(ExecCode(ExecReq(container_id_, {"true"}, false, false, true, false)),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(AttachCode(AttachReq(container_id_, false, false, true, false)), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ForwardCode(ForwardReq(sandbox_id_)), absl::StatusCode::kFailedPrecondition);
}

TEST_F(StreamingRpcsTest, IssuerErrorsReachTheCaller) {
  // The kubelet answers RESOURCE_EXHAUSTED (too many sessions in flight) with 429.
  issuer_.FailWith(absl::ResourceExhaustedError("maximum number of in-flight requests exceeded"));
  EXPECT_EQ(ExecCode(ExecReq(container_id_, {"true"}, false, false, true, false)),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(AttachCode(AttachReq(container_id_, false, false, true, false)), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ForwardCode(ForwardReq(sandbox_id_)), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace shim
