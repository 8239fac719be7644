// --log-level=trace and the log context: what a CRI call's block lists (Docker calls
// through the real transport, CNI runs), that credentials never reach it, and the
// path templates that label Docker calls in the metrics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/log.h"
#include "common/log_context.h"
#include "dockerclient/http_transport.h"
#include "observability/families.h"
#include "observability/hooks.h"
#include "observability/redact.h"
#include "observability/rpc_scope.h"
#include "tests/unit/test_http_server.h"

namespace observability {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// --log-level=trace for one test.
class TraceOn {
 public:
  TraceOn() : level_(common::GetLogLevel()) {
    common::SetLogLevel(common::LogLevel::kDebug);
    common::SetTraceCalls(true);
  }
  ~TraceOn() {
    common::SetTraceCalls(false);
    common::SetLogLevel(level_);
  }

 private:
  common::LogLevel level_;
};

TEST(Redact, AuthConfigFieldsAreRedactedOthersKept) {
  const std::string auth =
      R"({"username":"tester","password":"s3cret-pass","serveraddress":"127.0.0.1:5001",)"
      R"("identitytoken":"id-tok","registrytoken":"reg-tok","auth":"dGVzdGVyOnMzY3JldC1wYXNz","IdentityToken": "x-tok"})";
  const std::string out = RedactSecrets(auth);
  for (const char* secret : {"s3cret-pass", "id-tok", "reg-tok", "dGVzdGVyOnMzY3JldC1wYXNz", "x-tok"}) {
    EXPECT_THAT(out, Not(HasSubstr(secret))) << out;
  }
  EXPECT_THAT(out, HasSubstr(R"("username":"tester")"));
  EXPECT_THAT(out, HasSubstr(R"("serveraddress":"127.0.0.1:5001")"));
  EXPECT_THAT(out, HasSubstr(R"("password":"<redacted>")"));
  EXPECT_THAT(out, HasSubstr(R"("IdentityToken": "<redacted>")"));
}

TEST(Redact, EnvironmentValuesAreRedactedNamesKept) {
  const std::string out =
      RedactSecrets(R"({"Image":"busybox","Env":["PATH=/bin", "DB_PASSWORD=hunter2", "NOVALUE"],"Cmd":["sh"]})");
  EXPECT_EQ(out,
            R"({"Image":"busybox","Env":["PATH=<redacted>", "DB_PASSWORD=<redacted>", "<redacted>"],"Cmd":["sh"]})");
}

TEST(Redact, CutOrOddJsonLeaksNothing) {
  EXPECT_EQ(RedactSecrets(R"({"password":"abc)"), R"({"password":"<redacted>")");
  EXPECT_EQ(RedactSecrets(R"({"password":"a\"b","x":"y"})"), R"({"password":"<redacted>","x":"y"})");
  EXPECT_EQ(RedactSecrets(R"({"client_secret" : "zzz", "n": 1})"), R"({"client_secret" : "<redacted>", "n": 1})");
  EXPECT_EQ(RedactSecrets(R"({"token": null, "password"})"), R"({"token": null, "password"})");
  EXPECT_EQ(RedactSecrets("not json at all"), "not json at all");
  EXPECT_EQ(RedactSecrets(R"({"Env":["A=1")"), R"({"Env":["A=<redacted>")");
}

TEST(Redact, AbbreviateCutsAndKeepsOneLine) {
  EXPECT_EQ(Abbreviate("short", 10), "short");
  EXPECT_EQ(Abbreviate("0123456789abc", 10), "0123456789... (13 bytes)");
  EXPECT_EQ(Abbreviate("a\nb\r\n", 10), "a\\nb\\r\\n");
}

TEST(Redact, DecodeTargetShowsFiltersAsJson) {
  EXPECT_EQ(DecodeTarget("/containers/json?all=1&filters=%7B%22label%22%3A%5B%22a%3Db%22%5D%7D"),
            R"(/containers/json?all=1&filters={"label":["a=b"]})");
  EXPECT_EQ(DecodeTarget("/images/create?fromImage=127.0.0.1%3A5000%2Fbusybox&tag=latest"),
            "/images/create?fromImage=127.0.0.1:5000/busybox&tag=latest");
  EXPECT_EQ(DecodeTarget("/odd%2"), "/odd%2");
  EXPECT_EQ(DecodeTarget("/odd%zz"), "/odd%zz");
}

TEST(DockerEndpoint, TemplatesIdsAndNames) {
  EXPECT_EQ(DockerEndpoint("/_ping"), "/_ping");
  EXPECT_EQ(DockerEndpoint("/v1.41/version"), "/version");
  EXPECT_EQ(DockerEndpoint("/v1.41/containers/json?all=1&filters=%7B%7D"), "/containers/json");
  EXPECT_EQ(DockerEndpoint("/v1.41/containers/create?name=k8s_POD_x"), "/containers/create");
  EXPECT_EQ(DockerEndpoint("/v1.41/containers/3f2a9c/json"), "/containers/{id}/json");
  EXPECT_EQ(DockerEndpoint("/v1.41/containers/3f2a9c?force=1&v=1"), "/containers/{id}");
  EXPECT_EQ(DockerEndpoint("/v1.41/containers/3f2a9c/stop?t=10"), "/containers/{id}/stop");
  EXPECT_EQ(DockerEndpoint("/v1.41/exec/abc/start"), "/exec/{id}/start");
  EXPECT_EQ(DockerEndpoint("/v1.41/images/json"), "/images/json");
  EXPECT_EQ(DockerEndpoint("/v1.41/images/create?fromImage=busybox&tag=latest"), "/images/create");
  EXPECT_EQ(DockerEndpoint("/v1.41/images/127.0.0.1:5000/busybox:latest/json"), "/images/{name}/json");
  EXPECT_EQ(DockerEndpoint("/v1.41/images/busybox/json"), "/images/{name}/json");
  EXPECT_EQ(DockerEndpoint("/v1.41/images/sha256:abc?force=0&noprune=0"), "/images/{name}");
  EXPECT_EQ(DockerEndpoint("/v1.41/networks/bridge"), "/networks/{id}");
  EXPECT_EQ(DockerEndpoint("/v1.41/system/df"), "/system/df");
}

TEST(LogContext, LinesNameTheCallAndItsObjects) {
  const std::string pod(64, 'a');
  testing::internal::CaptureStderr();
  LOG_INFO << "outside";
  {
    common::ScopedLogContext outer(common::LogContext{"StopPodSandbox", pod, ""});
    LOG_INFO << "stopping";
    {
      common::ScopedLogContext inner(common::LogContext{"CreateContainer", "default/web", "app"});
      LOG_WARN << "inner";
    }
    LOG_INFO << "restored";
  }
  LOG_INFO << "after";
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, HasSubstr("] outside\n"));
  EXPECT_THAT(out, HasSubstr("] [StopPodSandbox pod=aaaaaaaaaaaa] stopping\n"));
  EXPECT_THAT(out, HasSubstr("] [CreateContainer pod=default/web container=app] inner\n"));
  EXPECT_THAT(out, HasSubstr("] [StopPodSandbox pod=aaaaaaaaaaaa] restored\n"));
  EXPECT_THAT(out, HasSubstr("] after\n"));
}

TEST(LogContext, RpcScopeTakesIdsFromTheRequest) {
  struct ExecLike {
    std::string container_id() const { return "c0ffee"; }
  };
  testing::internal::CaptureStderr();
  {
    RpcScope scope("ExecSync", ExecLike{});
    LOG_INFO << "running";
    scope.Finish(0, "");
  }
  EXPECT_THAT(testing::internal::GetCapturedStderr(), HasSubstr("] [ExecSync container=c0ffee] running\n"));
}

// A registry that echoes a token back: the trace must hide the credentials both ways.
void PullAnswer(int fd, int) {
  std::string buffer;
  while (auto req = testhttp::ReadRequest(fd, buffer)) {
    const std::string body = R"({"status":"Pulling","identitytoken":"server-side-token"})";
    if (!testhttp::WriteAll(fd, testhttp::Response(200, body))) return;
  }
}

struct PullLike {
  std::string pod_sandbox_id() const { return ""; }
};

TEST(Trace, BlockListsDockerAndCniCallsWithoutSecrets) {
  TraceOn trace;
  testhttp::UnixHttpServer server(PullAnswer);
  dockerclient::HttpTransport transport(server.path(), server.endpoint());
  const std::string header_value = "eyJwYXNzd29yZCI6InMzY3JldC1wYXNzIn0=";
  testing::internal::CaptureStderr();
  {
    RpcScope scope("PullImage", PullLike{});
    ASSERT_NE(CallTrace::Current(), nullptr);
    auto response = transport.Request(common::Context::WithTimeout(absl::Seconds(5)), "POST",
                                      "/v1.41/images/create?fromImage=127.0.0.1:5001/private/busybox&tag=latest",
                                      R"({"username":"tester","password":"s3cret-pass"})",
                                      {{"X-Registry-Auth", header_value}});
    ASSERT_TRUE(response.ok()) << response.status();
    CniCall cni("ADD", "bridge", "cbr0", R"({"cniVersion":"1.0.0","name":"cbr0","type":"bridge"})");
    EXPECT_EQ(*cni.Done(absl::StatusOr<std::string>(R"({"ips":[{"address":"10.88.0.5/16"}]})")),
              R"({"ips":[{"address":"10.88.0.5/16"}]})");  // passed on as it came
    scope.Finish(0, "");
  }
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, HasSubstr("DEBUG rpc_scope.cc:"));
  EXPECT_THAT(out, HasSubstr("] [PullImage] trace: PullImage OK in "));
  EXPECT_THAT(out, HasSubstr(", 2 calls:\n"));
  EXPECT_THAT(out, HasSubstr("  docker POST /v1.41/images/create?fromImage=127.0.0.1:5001/private/busybox&tag=latest"
                             " (X-Registry-Auth: <redacted>) -> 200 in "));
  EXPECT_THAT(out, HasSubstr(R"(> {"username":"tester","password":"<redacted>"})"));
  EXPECT_THAT(out, HasSubstr(R"(< {"status":"Pulling","identitytoken":"<redacted>"})"));
  EXPECT_THAT(out, HasSubstr("  cni ADD bridge (network cbr0) -> ok in "));
  EXPECT_THAT(out, HasSubstr(R"(< {"ips":[{"address":"10.88.0.5/16"}]})"));
  for (const std::string& secret : {std::string("s3cret-pass"), header_value, std::string("server-side-token")}) {
    EXPECT_THAT(out, Not(HasSubstr(secret)));
  }
}

TEST(Trace, FailedCallsShowTheirErrorAndNothingIsRecordedBelowTrace) {
  {
    TraceOn trace;
    dockerclient::HttpTransport transport("/nonexistent/docker.sock", "unix:///nonexistent/docker.sock");
    testing::internal::CaptureStderr();
    {
      RpcScope scope("Version", PullLike{});
      EXPECT_FALSE(transport.Request(common::Context::WithTimeout(absl::Seconds(5)), "GET", "/_ping").ok());
      CniCall cni("DEL", "portmap", "cbr0", "{}");
      EXPECT_EQ(cni.Done(absl::StatusOr<std::string>(absl::InternalError("iptables: no chain"))).status().message(),
                "iptables: no chain");
      scope.Finish(14, "cannot connect");
    }
    const std::string out = testing::internal::GetCapturedStderr();
    EXPECT_THAT(out, HasSubstr("trace: Version UNAVAILABLE (cannot connect) in "));
    EXPECT_THAT(out, HasSubstr("  docker GET /_ping -> failed: no answer: the connection to dockerd failed in "));
    EXPECT_THAT(out, HasSubstr("  cni DEL portmap (network cbr0) -> failed: iptables: no chain in "));
  }
  // Debug logging alone records nothing.
  common::SetLogLevel(common::LogLevel::kDebug);
  testing::internal::CaptureStderr();
  {
    RpcScope scope("Version", PullLike{});
    EXPECT_EQ(CallTrace::Current(), nullptr);
    scope.Finish(0, "");
  }
  EXPECT_THAT(testing::internal::GetCapturedStderr(), Not(HasSubstr("trace: ")));
  common::SetLogLevel(common::LogLevel::kInfo);
}

TEST(Trace, CallsAreCountedInTheMetrics) {
  testhttp::UnixHttpServer server(PullAnswer);
  dockerclient::HttpTransport transport(server.path(), server.endpoint());
  Histogram& docker = Metrics().docker_duration.With({"GET", "/containers/{id}/json", "200"});
  const uint64_t before = docker.Read().cumulative.back();
  ASSERT_TRUE(transport.Request(common::Context::WithTimeout(absl::Seconds(5)), "GET", "/v1.41/containers/abc/json").ok());
  EXPECT_EQ(docker.Read().cumulative.back(), before + 1);

  Counter& calls = Metrics().cri_requests.With({"RemoveContainer", "NOT_FOUND"});
  const uint64_t calls_before = calls.Value();
  RpcScope("RemoveContainer", PullLike{}).Finish(5, "no such container");
  EXPECT_EQ(calls.Value(), calls_before + 1);
  EXPECT_THAT(DefaultRegistry().Render(),
              HasSubstr("dockershim_cri_request_duration_seconds_count{method=\"RemoveContainer\"} "));

  EXPECT_FALSE(CniCall("CHECK", "bridge", "n1", "{}").Done(absl::StatusOr<std::string>(absl::InternalError("x"))).ok());
  EXPECT_GE(Metrics().cni_errors.With({"CHECK", "bridge", "n1"}).Value(), 1u);
}

TEST(Trace, GrpcCodeNames) {
  EXPECT_EQ(GrpcCodeName(0), "OK");
  EXPECT_EQ(GrpcCodeName(5), "NOT_FOUND");
  EXPECT_EQ(GrpcCodeName(16), "UNAUTHENTICATED");
  EXPECT_EQ(GrpcCodeName(99), "UNKNOWN");
}

}  // namespace
}  // namespace observability
