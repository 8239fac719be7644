#include "dockerclient/errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dockerclient {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct CodeCase {
  int http_status;
  ConflictMeans conflict;
  absl::StatusCode code;
};

class CodeForHttpStatusTest : public ::testing::TestWithParam<CodeCase> {};

TEST_P(CodeForHttpStatusTest, Maps) {
  EXPECT_EQ(CodeForHttpStatus(GetParam().http_status, GetParam().conflict), GetParam().code);
}

constexpr auto kExists = ConflictMeans::kAlreadyExists;
constexpr auto kState = ConflictMeans::kFailedPrecondition;

INSTANTIATE_TEST_SUITE_P(Table, CodeForHttpStatusTest,
                         ::testing::Values(CodeCase{400, kState, absl::StatusCode::kInvalidArgument},
                                           CodeCase{413, kState, absl::StatusCode::kInvalidArgument},
                                           CodeCase{414, kState, absl::StatusCode::kInvalidArgument},
                                           CodeCase{431, kState, absl::StatusCode::kInvalidArgument},
                                           CodeCase{401, kState, absl::StatusCode::kUnauthenticated},
                                           CodeCase{403, kState, absl::StatusCode::kPermissionDenied},
                                           CodeCase{404, kState, absl::StatusCode::kNotFound},
                                           CodeCase{409, kExists, absl::StatusCode::kAlreadyExists},
                                           CodeCase{409, kState, absl::StatusCode::kFailedPrecondition},
                                           CodeCase{304, kState, absl::StatusCode::kFailedPrecondition},
                                           CodeCase{408, kState, absl::StatusCode::kDeadlineExceeded},
                                           CodeCase{504, kState, absl::StatusCode::kDeadlineExceeded},
                                           CodeCase{501, kState, absl::StatusCode::kUnimplemented},
                                           CodeCase{503, kState, absl::StatusCode::kUnavailable},
                                           CodeCase{500, kState, absl::StatusCode::kInternal},
                                           CodeCase{418, kExists, absl::StatusCode::kInternal}));

struct DockerErrorCase {
  int http_status;
  const char* message;
  absl::StatusCode code;
};

class CodeForDockerErrorTest : public ::testing::TestWithParam<DockerErrorCase> {};

TEST_P(CodeForDockerErrorTest, Maps) {
  EXPECT_EQ(CodeForDockerError(GetParam().http_status, GetParam().message, kState), GetParam().code)
      << GetParam().http_status << " " << GetParam().message;
}

INSTANTIATE_TEST_SUITE_P(
    Table, CodeForDockerErrorTest,
    ::testing::Values(
        // An image a concurrent delete removed first: 20.10 says 500, 26.1 and 28.5 say 404.
        DockerErrorCase{500, "unrecognized image ID sha256:7b3d", absl::StatusCode::kNotFound},
        DockerErrorCase{404, "unrecognized image ID sha256:7b3d", absl::StatusCode::kNotFound},
        DockerErrorCase{404, "No such image: sha256:7b3d", absl::StatusCode::kNotFound},
        DockerErrorCase{409,
                        "conflict: unable to delete 7b3d (cannot be forced) - image is being used by running "
                        "container 0f1e",
                        absl::StatusCode::kFailedPrecondition},
        DockerErrorCase{500, "driver failed", absl::StatusCode::kInternal}));

struct PullCodeCase {
  const char* message;
  int http_status;
  absl::StatusCode code;
};

TEST(IsRemovalInProgressTest, OnlyDockersRefusalOfASecondRemoval) {
  EXPECT_TRUE(IsRemovalInProgress(HttpError(409, R"({"message":"removal of container 0f1e is already in progress"})",
                                            "remove container 0f1e")));
  EXPECT_FALSE(IsRemovalInProgress(HttpError(409, R"({"message":"You cannot remove a running container 0f1e"})",
                                             "remove container 0f1e")));
  EXPECT_FALSE(IsRemovalInProgress(HttpError(500, R"({"message":"removal of container 0f1e is already in progress"})",
                                             "remove container 0f1e")));
  EXPECT_FALSE(IsRemovalInProgress(absl::OkStatus()));
}

class PullErrorCodeTest : public ::testing::TestWithParam<PullCodeCase> {};

TEST_P(PullErrorCodeTest, Maps) {
  EXPECT_EQ(PullErrorCode(GetParam().message, GetParam().http_status), GetParam().code)
      << GetParam().http_status << " " << GetParam().message;
}

// The registry wordings are those of Docker 20.10, 26.1 and 28.5 (the same on all three
// unless noted), as /images/create answered them.
INSTANTIATE_TEST_SUITE_P(
    Table, PullErrorCodeTest,
    ::testing::Values(
        PullCodeCase{"manifest for r/x:1 not found: manifest unknown: manifest unknown", 404,
                     absl::StatusCode::kNotFound},
        PullCodeCase{"manifest unknown", 0, absl::StatusCode::kNotFound},
        PullCodeCase{"pull access denied for nosuch, repository does not exist or may require 'docker login': "
                     "denied: requested access to the resource is denied",
                     404, absl::StatusCode::kNotFound},
        PullCodeCase{"manifest for 127.0.0.1:5000/x509:tls not found: manifest unknown: manifest unknown", 404,
                     absl::StatusCode::kNotFound},
        PullCodeCase{"Head \"https://r/v2/x/manifests/1\": unauthorized: authentication required", 500,
                     absl::StatusCode::kPermissionDenied},
        PullCodeCase{"Get \"https://r/v2/\": no basic auth credentials", 500, absl::StatusCode::kPermissionDenied},
        PullCodeCase{"denied: requested access to the resource is denied", 0, absl::StatusCode::kPermissionDenied},
        PullCodeCase{"Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused", 500,
                     absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io on "
                     "10.255.255.53:53: no such host",
                     500, absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://denied.example:5000/v2/\": dial tcp: lookup denied.example: no such host", 500,
                     absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://192.0.2.99:5000/v2/\": dial tcp 192.0.2.99:5000: connect: no route to host", 500,
                     absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://10.1.2.3/v2/\": dial tcp 10.1.2.3:443: i/o timeout", 500,
                     absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://r:5000/v2/\": net/http: TLS handshake timeout", 500,
                     absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://r:5000/v2/\": tls: first record does not look like a TLS handshake", 500,
                     absl::StatusCode::kUnavailable},
        // 20.10 leaves out 26.1's "tls: failed to verify certificate: ".
        PullCodeCase{"Get \"https://r:5000/v2/\": x509: certificate signed by unknown authority", 500,
                     absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://r:5000/v2/\": tls: failed to verify certificate: x509: cannot validate "
                     "certificate for 192.0.2.2 because it doesn't contain any IP SANs",
                     500, absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://r:5000/v2/\": read tcp 192.0.2.2:35432->192.0.2.2:5000: read: connection reset "
                     "by peer",
                     500, absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://r/v2/\": http: server gave HTTP response to HTTPS client", 500,
                     absl::StatusCode::kUnavailable},
        PullCodeCase{"Get \"https://r/v2/\": net/http: request canceled while waiting for connection "
                     "(Client.Timeout exceeded while awaiting headers)",
                     500, absl::StatusCode::kUnavailable},
        PullCodeCase{"unexpected EOF", 0, absl::StatusCode::kUnknown},
        PullCodeCase{"invalid reference format", 400, absl::StatusCode::kInvalidArgument}));

TEST(PullErrorTest, NamesTheRegistryThatCannotBeReached) {
  const absl::Status hub = PullError("docker.io/library/nonexistent:latest",
                                     "Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup "
                                     "registry-1.docker.io on 10.255.255.53:53: no such host",
                                     500);
  EXPECT_EQ(hub.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(hub.message(),
            "pull image docker.io/library/nonexistent:latest: registry docker.io (registry-1.docker.io) cannot be "
            "reached: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io on "
            "10.255.255.53:53: no such host");
  const absl::Status local = PullError("127.0.0.1:1/busybox:latest",
                                       "Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused",
                                       0);
  EXPECT_EQ(local.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(local.message(), HasSubstr("pull image 127.0.0.1:1/busybox:latest: registry 127.0.0.1:1 cannot be reached: "));
}

TEST(PullErrorTest, ContainerdThatDockerCannotReachIsNotTheRegistry) {
  // Docker 28.5 with the containerd image store, its containerd killed (HTTP 503).
  const absl::Status s = PullError("127.0.0.1:5000/busybox:1.0",
                                   "Unavailable: connection error: desc = \"transport: Error while dialing: dial unix "
                                   "/run/docker/containerd/containerd.sock: connect: connection refused\"",
                                   503);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("pull image 127.0.0.1:5000/busybox:1.0: Docker cannot reach its containerd: "));
  EXPECT_THAT(s.message(), HasSubstr("containerd.sock"));
  EXPECT_THAT(s.message(), Not(HasSubstr("registry")));
}

TEST(PullErrorTest, ALostConnectionToContainerdIsNotTheRegistryEither) {
  // Docker 29.7 when its containerd is killed mid-call.
  const absl::Status s = PullError(
      "127.0.0.1:5000/busybox:1.0",
      "Unavailable: connection error: desc = \"error reading server preface: connection reset by peer\"", 503);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("Docker cannot reach its containerd: "));
}

TEST(HttpErrorTest, A503OfDockersContainerdSaysSo) {
  const absl::Status gone = HttpError(
      503,
      R"({"message":"Unavailable: connection error: desc = \"error reading server preface: connection reset by peer\""})",
      "list images");
  EXPECT_EQ(gone.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(gone.message(),
            "list images: Docker cannot reach its containerd: Unavailable: connection error: desc = \"error reading "
            "server preface: connection reset by peer\"");
  // Another 503 keeps Docker's words alone.
  const absl::Status other = HttpError(503, R"({"message":"this node is not a swarm manager"})", "list services");
  EXPECT_EQ(other.message(), "list services: this node is not a swarm manager");
}

TEST(PullErrorTest, OtherFailuresKeepDockersMessage) {
  const absl::Status missing =
      PullError("127.0.0.1:5000/does-not-exist:latest",
                "manifest for 127.0.0.1:5000/does-not-exist:latest not found: manifest unknown: manifest unknown", 404);
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "pull image 127.0.0.1:5000/does-not-exist:latest: manifest for 127.0.0.1:5000/does-not-exist:latest not "
            "found: manifest unknown: manifest unknown");
}

TEST(DockerErrorMessageTest, ExtractsMessage) {
  EXPECT_EQ(DockerErrorMessage(R"({"message":"No such container: abc123"})"), "No such container: abc123");
  EXPECT_EQ(DockerErrorMessage("  page not found\n"), "page not found");
  EXPECT_EQ(DockerErrorMessage(R"({"message": 42})"), R"({"message": 42})");
  EXPECT_EQ(DockerErrorMessage(R"({"other":"x"})"), R"({"other":"x"})");
  EXPECT_EQ(DockerErrorMessage(""), "");
}

TEST(HttpErrorTest, NamesOperationAndKeepsDockersMessage) {
  const absl::Status s = HttpError(404, R"({"message":"No such container: abc123"})", "inspect container abc123");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "inspect container abc123: No such container: abc123");
}

TEST(HttpErrorTest, ConflictOnCreateIsAlreadyExists) {
  const absl::Status s = HttpError(409, R"({"message":"Conflict. The container name \"/x\" is already in use"})",
                                   "create container x", ConflictMeans::kAlreadyExists);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("already in use"));
}

TEST(HttpErrorTest, ImageGoneUnderAConcurrentDeleteIsNotFound) {
  const absl::Status s = HttpError(500, R"({"message":"unrecognized image ID sha256:7b3d"})", "remove image sha256:7b3d");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "remove image sha256:7b3d: unrecognized image ID sha256:7b3d");
}

TEST(HttpErrorTest, EmptyBodyNamesTheStatus) {
  const absl::Status s = HttpError(500, "", "list images");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "list images: HTTP 500");
}

TEST(TransportErrorsTest, ConnectErrorIsUnavailableNamingTheEndpoint) {
  const absl::Status s = ConnectError("unix:///var/run/docker.sock", "connection refused");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("unix:///var/run/docker.sock"));
  EXPECT_THAT(s.message(), HasSubstr("connection refused"));
}

TEST(TransportErrorsTest, DeadlineAndCancelNameTheOperation) {
  const absl::Status deadline = DeadlineError("stop container abc");
  EXPECT_EQ(deadline.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(deadline.message(), HasSubstr("stop container abc"));
  const absl::Status cancelled = CancelledError("pull image busybox");
  EXPECT_EQ(cancelled.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(cancelled.message(), HasSubstr("pull image busybox"));
}

}  // namespace
}  // namespace dockerclient
