#include "dockerclient/errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dockerclient {
namespace {

using ::testing::HasSubstr;

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
