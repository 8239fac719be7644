// The image service against a real dockerd and registries on 127.0.0.1
// (scripts/test-env.sh starts them and pushes the images).
#include <netdb.h>

#include <latch>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/network/docker_bridge.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

namespace shim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ImagesIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    auto docker = dockerclient::DockerClientImpl::Create(testenv::DockerEndpoint());
    ASSERT_TRUE(docker.ok()) << docker.status();
    docker_ = std::move(*docker);
    network_ = std::make_unique<network::DockerBridgeNetwork>(*docker_);
    Options options;
    options.pod_infra_image = testenv::PauseImage();
    service_ = std::make_unique<CriService>(options, *docker_, *network_);
    ASSERT_TRUE(docker_->Ping(ctx_).ok()) << "dockerd must run (scripts/test-env.sh)";
  }

  absl::StatusOr<v1::PullImageResponse> Pull(const std::string& image, const std::string& user = "",
                                             const std::string& password = "") {
    v1::PullImageRequest req;
    req.mutable_image()->set_image(image);
    if (!user.empty()) {
      req.mutable_auth()->set_username(user);
      req.mutable_auth()->set_password(password);
    }
    return service_->PullImage(ctx_, req);
  }
  std::optional<v1::Image> Status(const std::string& image) {
    v1::ImageStatusRequest req;
    req.mutable_image()->set_image(image);
    auto resp = service_->ImageStatus(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok() || !resp->has_image()) return std::nullopt;
    return resp->image();
  }
  absl::Status Remove(const std::string& image) {
    v1::RemoveImageRequest req;
    req.mutable_image()->set_image(image);
    return service_->RemoveImage(ctx_, req).status();
  }

  // An image of its own (a commit of the test busybox with a unique label), so that no
  // other test that runs at the same time holds or removes it. Returns its ID.
  std::string MakeOwnImage(const std::string& purpose) {
    static std::mt19937_64 rng{std::random_device{}()};
    const std::string name = absl::StrCat("dstest-images/", purpose, "-", absl::Hex(rng() & 0xffffff), ":latest");
    const std::string container =
        std::string(absl::StripAsciiWhitespace(testenv::Sh("docker create " + testenv::BusyboxImage() + " true")));
    EXPECT_FALSE(container.empty()) << "docker create failed";
    EXPECT_TRUE(testenv::ShOk(absl::StrCat("docker commit -c 'LABEL dstest.image=", name, "' ", container, " ", name,
                                           " >/dev/null")));
    testenv::ShOk("docker rm " + container);
    const std::optional<v1::Image> image = Status(name);
    EXPECT_TRUE(image.has_value()) << name;
    if (image) own_images_.push_back(image->id());
    return image ? image->id() : "";
  }
  void TearDown() override {
    for (const std::string& id : own_images_) testenv::ShOk("docker rmi -f " + id);
  }

  std::vector<std::string> own_images_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(60));
  std::unique_ptr<dockerclient::DockerClient> docker_;
  std::unique_ptr<network::NetworkPlugin> network_;
  std::unique_ptr<CriService> service_;
};

TEST_F(ImagesIntegration, PullStatusListRemove) {
  const std::string image = testenv::Registry() + "/busybox:1.0";
  ASSERT_TRUE(Remove(image).ok());
  ASSERT_FALSE(Status(image).has_value());

  auto pulled = Pull(image);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_EQ(pulled->image_ref().rfind("sha256:", 0), 0u);

  auto status = Status(image);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->id(), pulled->image_ref());
  EXPECT_GT(status->size(), 0u);
  EXPECT_FALSE(status->repo_digests().empty()) << "an image pulled from a registry has a digest";
  EXPECT_EQ(Status(status->repo_digests(0))->id(), status->id()) << "lookup by digest";

  v1::ListImagesRequest list;
  list.mutable_filter()->mutable_image()->set_image(image);
  auto listed = service_->ListImages(ctx_, list);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->images_size(), 1);
  EXPECT_EQ(listed->images(0).id(), status->id());

  ASSERT_TRUE(Remove(image).ok());
  EXPECT_FALSE(Status(image).has_value());
  EXPECT_TRUE(Remove(image).ok()) << "removing an absent image succeeds";
}

TEST_F(ImagesIntegration, PullWithoutTagMeansLatest) {
  const std::string repo = testenv::Registry() + "/busybox";
  ASSERT_TRUE(Remove(repo + ":latest").ok());
  ASSERT_TRUE(Pull(repo).ok());
  EXPECT_TRUE(Status(repo + ":latest").has_value());
  ASSERT_TRUE(Remove(repo).ok());
}

TEST_F(ImagesIntegration, PullByDigest) {
  const std::string image = testenv::Registry() + "/busybox:latest";
  ASSERT_TRUE(Pull(image).ok());
  auto status = Status(image);
  ASSERT_TRUE(status && !status->repo_digests().empty());
  std::string digest_ref = status->repo_digests(0);
  ASSERT_TRUE(Remove(status->id()).ok());
  auto pulled = Pull(digest_ref);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_EQ(pulled->image_ref(), status->id());
  ASSERT_TRUE(Remove(pulled->image_ref()).ok());
  EXPECT_FALSE(Status(digest_ref).has_value());
}

TEST_F(ImagesIntegration, RemoveByIdRemovesAllTags) {
  const std::string a = testenv::Registry() + "/busybox:latest";
  const std::string b = testenv::Registry() + "/busybox:1.0";
  ASSERT_TRUE(Pull(a).ok());
  ASSERT_TRUE(Pull(b).ok());
  auto sa = Status(a), sb = Status(b);
  ASSERT_TRUE(sa && sb);
  ASSERT_EQ(sa->id(), sb->id()) << "the test registry serves one image under both tags";
  EXPECT_EQ(sa->repo_tags_size(), 2);
  ASSERT_TRUE(Remove(sa->id()).ok());
  EXPECT_FALSE(Status(a).has_value());
  EXPECT_FALSE(Status(b).has_value());
}

TEST_F(ImagesIntegration, MissingTagIsNotFoundNamingTheImage) {
  auto pulled = Pull(testenv::Registry() + "/busybox:no-such-tag");
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().code(), absl::StatusCode::kNotFound) << pulled.status();
  EXPECT_NE(pulled.status().message().find("no-such-tag"), std::string::npos);
}

TEST_F(ImagesIntegration, MissingRepositoryIsNotFound) {
  auto pulled = Pull(testenv::Registry() + "/does-not-exist:latest");
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().code(), absl::StatusCode::kNotFound) << pulled.status();
  EXPECT_THAT(pulled.status().message(), HasSubstr("does-not-exist"));
}

TEST_F(ImagesIntegration, UnreachableRegistryIsUnavailableNamingItWithoutTheCredentials) {
  const std::string password = "unreachable-Pa55word-xyz";
  auto refused = Pull("127.0.0.1:1/busybox:latest", testenv::AuthUser(), password);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("registry 127.0.0.1:1 cannot be reached: "));
  EXPECT_THAT(refused.status().message(), Not(HasSubstr(password)));

  // .invalid never resolves (RFC 2606).
  auto unresolved = Pull("no-such-registry.invalid:5000/busybox:latest");
  ASSERT_FALSE(unresolved.ok());
  EXPECT_EQ(unresolved.status().code(), absl::StatusCode::kUnavailable) << unresolved.status();
  EXPECT_THAT(unresolved.status().message(), HasSubstr("registry no-such-registry.invalid:5000 cannot be reached: "));
}

TEST_F(ImagesIntegration, OfflineDockerHubIsUnavailableNamingIt) {
  addrinfo* found = nullptr;
  if (::getaddrinfo("registry-1.docker.io", "443", nullptr, &found) == 0) {
    ::freeaddrinfo(found);
    GTEST_SKIP() << "registry-1.docker.io resolves: this node may reach Docker Hub";
  }
  auto pulled = Pull("nonexistent");
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.status().code(), absl::StatusCode::kUnavailable) << pulled.status();
  EXPECT_THAT(pulled.status().message(), HasSubstr("registry docker.io (registry-1.docker.io) cannot be reached: "));
}

TEST_F(ImagesIntegration, AuthRegistry) {
  const std::string image = testenv::AuthRegistry() + "/private/busybox:latest";
  ASSERT_TRUE(Remove(image).ok());

  auto anonymous = Pull(image);
  ASSERT_FALSE(anonymous.ok());
  EXPECT_NE(anonymous.status().message().find(testenv::AuthRegistry()), std::string::npos)
      << anonymous.status();

  const std::string wrong = "wrong-Pa55word-xyz";
  auto bad = Pull(image, testenv::AuthUser(), wrong);
  ASSERT_FALSE(bad.ok());
  std::string message(bad.status().message());
  EXPECT_NE(message.find(testenv::AuthRegistry()), std::string::npos) << message;
  EXPECT_EQ(message.find(wrong), std::string::npos) << "the password must never appear: " << message;

  auto good = Pull(image, testenv::AuthUser(), testenv::AuthPassword());
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE(Status(image).has_value());
  ASSERT_TRUE(Remove(image).ok());
}

TEST_F(ImagesIntegration, ConcurrentRemovesOfOneImageAllSucceed) {
  // critest's "should not fail on simultaneous RemoveImage calls": the image is gone for
  // every caller, whichever of them Docker let remove it.
  const std::string id = MakeOwnImage("remove-race");
  ASSERT_FALSE(id.empty());
  constexpr int kCallers = 8;
  std::vector<absl::Status> results(kCallers);
  std::latch ready(kCallers);
  std::vector<std::thread> callers;
  for (absl::Status& result : results) {
    callers.emplace_back([&] {
      ready.arrive_and_wait();
      result = Remove(id);
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (const absl::Status& result : results) EXPECT_TRUE(result.ok()) << result;
  EXPECT_FALSE(Status(id).has_value());
}

TEST_F(ImagesIntegration, RemovingAnImageAContainerUsesFailsNamingTheContainer) {
  const std::string id = MakeOwnImage("in-use");
  ASSERT_FALSE(id.empty());
  const std::string container = std::string(absl::StripAsciiWhitespace(testenv::Sh("docker create " + id + " true")));
  ASSERT_FALSE(container.empty());
  const absl::Status removed = Remove(id);
  EXPECT_EQ(removed.code(), absl::StatusCode::kFailedPrecondition) << removed;
  EXPECT_THAT(removed.message(), HasSubstr(container.substr(0, 12)));
  EXPECT_TRUE(Status(id).has_value()) << "the image stays";
  ASSERT_TRUE(testenv::ShOk("docker rm " + container));
  EXPECT_TRUE(Remove(id).ok());
}

TEST_F(ImagesIntegration, UserFromImageConfig) {
  struct Case {
    std::string image;
    std::optional<int64_t> uid;
    std::string username;
  };
  for (const Case& c : {Case{"user-uid", 1002, ""}, Case{"user-username", std::nullopt, "www-data"},
                        Case{"user-uid-group", 1003, ""}, Case{"user-username-group", std::nullopt, "www-data"}}) {
    const std::string image = testenv::Registry() + "/" + c.image + ":latest";
    ASSERT_TRUE(Pull(image).ok()) << image;
    auto status = Status(image);
    ASSERT_TRUE(status.has_value()) << image;
    EXPECT_EQ(status->has_uid() ? std::optional<int64_t>(status->uid().value()) : std::nullopt, c.uid) << image;
    EXPECT_EQ(status->username(), c.username) << image;
    ASSERT_TRUE(Remove(image).ok());
  }
}

TEST_F(ImagesIntegration, ImageFsInfo) {
  auto resp = service_->ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->image_filesystems_size(), 1);
  const auto& fs = resp->image_filesystems(0);
  auto info = docker_->Info(ctx_);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(fs.fs_id().mountpoint(), info->docker_root_dir);
  EXPECT_GT(fs.used_bytes().value(), 0u);
  EXPECT_GT(fs.inodes_used().value(), 0u);
  EXPECT_EQ(resp->container_filesystems_size(), 1);
}

}  // namespace
}  // namespace shim
