// Registry credentials never reach an error or the log: PullImage through the real gRPC
// service in-process, at debug level, against a Docker that echoes in its refusal
// everything it received (the X-Registry-Auth header and what it decodes to), as a
// careless registry or engine might.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "shim/cri_service.h"
#include "shim/grpc_limits.h"
#include "shim/grpc_services.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPassword[] = "pw-Hunter2-7f3a";
constexpr char kIdentityToken[] = "idtok-9c1e-Zq";
constexpr char kRegistryToken[] = "regtok-44b0-Yx";

// Refuses every pull, quoting the header and every credential it decoded from it.
class EchoingDocker final : public testing_fakes::FakeDockerClient {
 public:
  absl::Status PullImage(const common::Context& ctx, const dockerclient::PullOptions& options) override {
    // Records the call and the header; its own refusal (nothing is pullable) is replaced.
    FakeDockerClient::PullImage(ctx, options).IgnoreError();
    std::string decoded;
    std::string header = options.registry_auth;
    std::replace(header.begin(), header.end(), '-', '+');
    std::replace(header.begin(), header.end(), '_', '/');
    absl::Base64Unescape(header, &decoded);
    const nlohmann::json auth = nlohmann::json::parse(decoded, nullptr, false);
    std::string fields;
    if (auth.is_object())
      for (const auto& [key, value] : auth.items())
        if (value.is_string()) absl::StrAppend(&fields, " ", key, "=", value.get<std::string>());
    return absl::UnauthenticatedError(absl::StrCat("pull image ", options.reference,
                                                   ": unauthorized: X-Registry-Auth ", options.registry_auth, fields,
                                                   " raw ", decoded));
  }
};

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/credentials_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    Options o;
    o.root_directory = root_ + "/state";
    o.oom_score_adj_floor = -1000;
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());
    images_ = std::make_unique<ImageServiceImpl>(*service_, GrpcOptions{}, dispatcher_);
    grpc::ServerBuilder builder;
    ApplyGrpcLimits(builder);
    builder.RegisterService(images_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::ImageService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
    level_ = common::GetLogLevel();
    common::SetLogLevel(common::LogLevel::kDebug);
  }
  void TearDown() override {
    common::SetLogLevel(level_);
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // The pull's status, and everything the shim logged meanwhile.
  std::pair<grpc::Status, std::string> Pull(const v1::AuthConfig& auth) {
    v1::PullImageRequest req;
    req.mutable_image()->set_image("127.0.0.1:5001/private/busybox:latest");
    *req.mutable_auth() = auth;
    grpc::ClientContext ctx;
    v1::PullImageResponse resp;
    ::testing::internal::CaptureStderr();
    grpc::Status status = stub_->PullImage(&ctx, req, &resp);
    return {status, ::testing::internal::GetCapturedStderr()};
  }

  // None of the secrets, nor the header that carries them, is in `text`.
  static void ExpectNoSecret(const std::string& text, const v1::AuthConfig& auth, const std::string& header) {
    for (const std::string& secret :
         {std::string(kPassword), std::string(kIdentityToken), std::string(kRegistryToken), auth.auth(), header}) {
      if (!secret.empty()) {
        EXPECT_THAT(text, Not(HasSubstr(secret)));
      }
    }
  }

  std::string root_;
  EchoingDocker docker_;
  testing_fakes::FakeNetwork network_;
  std::unique_ptr<CriService> service_;
  dispatch::Dispatcher dispatcher_;
  std::unique_ptr<ImageServiceImpl> images_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::ImageService::Stub> stub_;
  common::LogLevel level_;
};

TEST_F(CredentialsTest, NoSecretInTheErrorOrTheDebugLog) {
  v1::AuthConfig password;
  password.set_username("tester");
  password.set_password(kPassword);
  v1::AuthConfig auth_field;
  auth_field.set_auth(absl::Base64Escape(absl::StrCat("tester:", kPassword)));
  v1::AuthConfig tokens;
  tokens.set_identity_token(kIdentityToken);
  tokens.set_registry_token(kRegistryToken);
  v1::AuthConfig everything = password;
  everything.set_identity_token(kIdentityToken);
  everything.set_registry_token(kRegistryToken);

  const std::vector<std::pair<const char*, v1::AuthConfig>> configs = {
      {"username and password", password}, {"auth field", auth_field}, {"tokens", tokens}, {"all", everything}};
  for (const auto& [what, auth] : configs) {
    SCOPED_TRACE(what);
    const auto [status, log] = Pull(auth);
    const std::string header = docker_.LastRegistryAuth();
    ASSERT_FALSE(header.empty()) << "the credentials should have reached Docker";
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
    // The refusal still says what went wrong and where.
    EXPECT_THAT(status.error_message(), HasSubstr("127.0.0.1:5001"));
    EXPECT_THAT(status.error_message(), HasSubstr("with the given credentials"));
    EXPECT_THAT(status.error_message(), HasSubstr("<redacted>"));
    ExpectNoSecret(status.error_message(), auth, header);
    EXPECT_THAT(log, HasSubstr("PullImage failed")) << "the debug log should have the call";
    ExpectNoSecret(log, auth, header);
  }
}

TEST_F(CredentialsTest, AnAuthFieldThatIsNotUtf8IsRefusedNotThrown) {
  v1::AuthConfig auth;
  auth.set_auth(absl::Base64Escape("\xff\xfe:\xc3"));
  const auto [status, log] = Pull(auth);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("not valid UTF-8"));
  EXPECT_EQ(docker_.CallCount("PullImage"), 0);
}

}  // namespace
}  // namespace shim
