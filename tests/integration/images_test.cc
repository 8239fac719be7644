// The image service against a real dockerd and registries on 127.0.0.1
// (scripts/test-env.sh starts them and pushes the images).
#include <netdb.h>

#include <latch>
#include <random>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/network/docker_bridge.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

namespace shim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Where the engine under test keeps images and writable layers, found apart from the
// shim: a graph driver's directory and image/ under DockerRootDir; on the containerd store
// the snapshotter's directory, the parent of the snapshots a running container's root
// overlay is made of (/proc/<pid>/mountinfo), and the content store beside it.
struct StoreDirs {
  std::string mountpoint;
  std::vector<std::string> dirs;
};
StoreDirs StoreDirsOfTheEngine() {
  const std::string root = testenv::Sh("docker info -f '{{.DockerRootDir}}' | tr -d '\\n'");
  const std::string driver = testenv::Sh("docker info -f '{{.Driver}}' | tr -d '\\n'");
  if (!absl::StrContains(testenv::Sh("docker info -f '{{json .DriverStatus}}'"), "io.containerd.snapshotter.v1"))
    return {root, {root + "/" + driver, root + "/image"}};
  const std::string id = std::string(absl::StripAsciiWhitespace(
      testenv::Sh("docker run -d --rm " + testenv::BusyboxImage() + " sleep 30")));
  const std::string pid = testenv::Sh("docker inspect -f '{{.State.Pid}}' " + id + " | tr -d '\\n'");
  const std::string lower = testenv::Sh("sed -n 's|.* / / .*lowerdir=\\([^:,]*\\).*|\\1|p' /proc/" + pid + "/mountinfo");
  testenv::ShOk("docker rm -f " + id);
  const size_t at = lower.find("/snapshots/");
  EXPECT_NE(at, std::string::npos) << "no snapshot in the root mount of a container: " << lower;
  if (at == std::string::npos) return {};
  const std::string snapshotter = lower.substr(0, at);
  const std::string containerd_root = snapshotter.substr(0, snapshotter.rfind('/'));
  return {snapshotter, {containerd_root + "/io.containerd.content.v1.content", snapshotter}};
}

// du's total over `dirs` (-x: each one's own file system; a hard link once).
std::pair<uint64_t, uint64_t> Du(const std::vector<std::string>& dirs) {
  const std::string args = absl::StrJoin(dirs, " ");
  return {std::stoull(testenv::Sh("du -scx -B1 " + args + " | tail -1 | cut -f1")),
          std::stoull(testenv::Sh("du -scx --inodes " + args + " | tail -1 | cut -f1"))};
}

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

TEST_F(ImagesIntegration, RemoveByTagLeavesTheOtherTag) {
  const std::string a = testenv::Registry() + "/busybox:latest";
  const std::string b = testenv::Registry() + "/busybox:1.0";
  ASSERT_TRUE(Pull(a).ok());
  ASSERT_TRUE(Pull(b).ok());
  const std::string id = Status(a)->id();
  ASSERT_TRUE(Remove(a).ok());
  EXPECT_FALSE(Status(a).has_value());
  auto left = Status(b);
  ASSERT_TRUE(left.has_value()) << "the other tag stays";
  EXPECT_EQ(left->id(), id);
  EXPECT_THAT(left->repo_tags(), ::testing::ElementsAre(b));
  ASSERT_TRUE(Remove(b).ok());
  EXPECT_FALSE(Status(id).has_value());
}

// Every image as ListImages and ImageStatus give it (one from Docker's list, the other
// from its inspect) and as Docker's list says: the same ID, names, digests and size
// (the kubelet's image GC keys on the ID and sums the sizes; the pause image is pinned).
TEST_F(ImagesIntegration, ListAndStatusAgreeWithEachOtherAndWithDocker) {
  auto listed = service_->ListImages(ctx_, v1::ListImagesRequest());
  ASSERT_TRUE(listed.ok()) << listed.status();
  const nlohmann::json docker = nlohmann::json::parse(
      testenv::Sh("curl -s --unix-socket " + testenv::DockerEndpoint().substr(7) + " http://d/images/json"));
  std::map<std::string, nlohmann::json> by_id;
  for (const nlohmann::json& image : docker) by_id[image.value("Id", "")] = image;
  bool pause_seen = false;
  for (const v1::Image& image : listed->images()) {
    SCOPED_TRACE(image.id());
    auto status = Status(image.id());
    if (!status) continue;  // removed by a test running beside this one
    EXPECT_EQ(status->id(), image.id());
    EXPECT_EQ(status->size(), image.size());
    EXPECT_THAT(status->repo_tags(), ::testing::UnorderedElementsAreArray(image.repo_tags()));
    EXPECT_THAT(status->repo_digests(), ::testing::UnorderedElementsAreArray(image.repo_digests()));
    EXPECT_EQ(status->pinned(), image.pinned());
    ASSERT_TRUE(by_id.count(image.id()));
    EXPECT_EQ(image.size(), by_id[image.id()].value("Size", uint64_t{0})) << "docker image ls / system df -v";
    for (const std::string& tag : image.repo_tags()) {
      if (tag == testenv::PauseImage()) {
        pause_seen = true;
        EXPECT_TRUE(image.pinned());
      }
    }
  }
  EXPECT_TRUE(pause_seen);
}

// The platforms of $REG/multiarch:latest (scripts/test-images.sh) as the registry serves
// its index: digest of the index, and per architecture the manifest's digest and JSON.
struct RegistryIndex {
  std::string digest;
  std::map<std::string, std::pair<std::string, nlohmann::json>> manifests;
};
RegistryIndex MultiarchIndex() {
  RegistryIndex out;
  const std::string base = "http://" + testenv::Registry() + "/v2/multiarch/manifests/";
  const std::string headers = testenv::Sh(
      "curl -sf -I -H 'Accept: application/vnd.oci.image.index.v1+json' " + base + "latest | tr -d '\\r'");
  const size_t at = headers.find("Docker-Content-Digest: ");
  if (at != std::string::npos) out.digest = headers.substr(at + 23, 71);
  const nlohmann::json index = nlohmann::json::parse(
      testenv::Sh("curl -sf -H 'Accept: application/vnd.oci.image.index.v1+json' " + base + "latest"), nullptr, false);
  if (!index.is_object()) return out;
  for (const nlohmann::json& m : index.value("manifests", nlohmann::json::array())) {
    const std::string digest = m.value("digest", "");
    out.manifests[m["platform"].value("architecture", "")] = {
        digest, nlohmann::json::parse(testenv::Sh("curl -sf -H 'Accept: " + m.value("mediaType", "") + "' " + base +
                                                  digest),
                                      nullptr, false)};
  }
  return out;
}

TEST_F(ImagesIntegration, AMultiPlatformIndexPullsAndReportsThisNodesPlatformOnly) {
  const std::string image = testenv::Registry() + "/multiarch:latest";
  const RegistryIndex index = MultiarchIndex();
  const std::string arch = testenv::Sh("docker version -f '{{.Server.Arch}}' | tr -d '\\n'");
  ASSERT_EQ(index.manifests.size(), 2u) << "scripts/test-env.sh pushes " << image;
  ASSERT_TRUE(index.manifests.count(arch)) << arch;
  const auto& [own_digest, own] = index.manifests.at(arch);
  std::string other_layer;
  for (const auto& [a, m] : index.manifests)
    if (a != arch) other_layer = m.second["layers"][0].value("digest", "");
  ASSERT_FALSE(other_layer.empty());

  ASSERT_TRUE(Remove(image).ok());
  auto pulled = Pull(image);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  auto status = Status(image);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->id(), pulled->image_ref());
  EXPECT_THAT(status->repo_digests(), ::testing::Contains(testenv::Registry() + "/multiarch@" + index.digest));
  // The node's platform was pulled: its files are those of the registry busybox.
  EXPECT_EQ(testenv::Sh("docker run --rm " + status->id() + " cat /registry-image"), "served by the test registry\n");

  const nlohmann::json inspect = nlohmann::json::parse(
      testenv::Sh("curl -s --unix-socket " + testenv::DockerEndpoint().substr(7) + " 'http://d/v1.48/images/" +
                  status->id() + "/json?manifests=1'"),
      nullptr, false);
  ASSERT_TRUE(inspect.is_object());
  if (inspect.contains("Manifests") && inspect["Manifests"].is_array()) {
    // The containerd store: the image is the index, both platforms are listed, only this
    // node's is there, and the size is what this node's platform holds.
    EXPECT_EQ(status->id(), index.digest);
    uint64_t own_total = 0;
    for (const nlohmann::json& m : inspect["Manifests"]) {
      const bool mine = m.value("ID", "") == own_digest;
      EXPECT_EQ(m.value("Available", false), mine) << m.dump();
      if (mine) own_total = m["Size"].value("Total", uint64_t{0});
    }
    EXPECT_GT(own_total, 0u);
    EXPECT_EQ(status->size(), own_total);
    const StoreDirs store = StoreDirsOfTheEngine();
    ASSERT_EQ(store.dirs.size(), 2u);
    const std::string blobs = store.dirs[0] + "/blobs/sha256/";
    EXPECT_FALSE(testenv::ShOk("test -e " + blobs + other_layer.substr(7))) << "the other platform's layer";
    EXPECT_TRUE(testenv::ShOk("test -e " + blobs + own["layers"][0].value("digest", "").substr(7)));
  } else {
    // A graph driver: the image is this platform's config.
    EXPECT_EQ(status->id(), own["config"].value("digest", ""));
  }
  std::printf("%s: ID %s, %llu bytes\n", image.c_str(), status->id().c_str(),
              static_cast<unsigned long long>(status->size()));
  v1::ListImagesRequest list;
  list.mutable_filter()->mutable_image()->set_image(image);
  auto listed = service_->ListImages(ctx_, list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->images_size(), 1);
  EXPECT_EQ(listed->images(0).id(), status->id());
  EXPECT_EQ(listed->images(0).size(), status->size());
  ASSERT_TRUE(Remove(image).ok());
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
    // Docker 28's containerd store does not read the config of an image whose layers it
    // did not fetch because another image's blobs had unpacked them (here the loaded test
    // busybox's): docker image inspect has no Architecture and an empty Config. The shim
    // says what Docker says then; Docker 29 reads the config.
    if (testenv::Sh("docker image inspect -f '{{.Architecture}}' " + image + " | tr -d '\\n'").empty()) {
      std::printf("note: Docker did not read the config of %s (docker image inspect: no Architecture)\n",
                  image.c_str());
      EXPECT_FALSE(status->has_uid()) << image;
      EXPECT_EQ(status->username(), "") << image;
    } else {
      EXPECT_EQ(status->has_uid() ? std::optional<int64_t>(status->uid().value()) : std::nullopt, c.uid) << image;
      EXPECT_EQ(status->username(), c.username) << image;
    }
    ASSERT_TRUE(Remove(image).ok());
  }
}

TEST_F(ImagesIntegration, ImageFsInfoIsWhatDuCountsInTheEnginesStore) {
  const StoreDirs store = StoreDirsOfTheEngine();
  ASSERT_FALSE(store.dirs.empty());
  // Other tests' engines may be busy: take an answer that du agrees with before and after.
  v1::FilesystemUsage fs;
  std::pair<uint64_t, uint64_t> before, after;
  for (int attempt = 0; attempt < 10; ++attempt) {
    CriService fresh(Options{}, *docker_, *network_);  // no figures kept from before
    before = Du(store.dirs);
    auto resp = fresh.ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
    after = Du(store.dirs);
    ASSERT_TRUE(resp.ok()) << resp.status();
    ASSERT_EQ(resp->image_filesystems_size(), 1);
    ASSERT_EQ(resp->container_filesystems_size(), 1);
    EXPECT_EQ(resp->container_filesystems(0).SerializeAsString(), resp->image_filesystems(0).SerializeAsString());
    fs = resp->image_filesystems(0);
    if (before == after) break;
  }
  ASSERT_EQ(before, after) << "the store kept changing";
  EXPECT_EQ(fs.fs_id().mountpoint(), store.mountpoint);
  EXPECT_EQ(fs.used_bytes().value(), before.first) << absl::StrJoin(store.dirs, " ");
  EXPECT_EQ(fs.inodes_used().value(), before.second) << absl::StrJoin(store.dirs, " ");
  // Docker's own count (docker system df: images' layers and containers' writable layers,
  // logical sizes): the blocks that hold them are no fewer.
  const nlohmann::json df = nlohmann::json::parse(
      testenv::Sh("curl -s --unix-socket " + testenv::DockerEndpoint().substr(7) + " http://d/v1.41/system/df"));
  uint64_t docker_bytes = df.value("LayersSize", uint64_t{0});
  for (const nlohmann::json& c : df["Containers"]) docker_bytes += c.value("SizeRw", uint64_t{0});
  std::printf("ImageFsInfo: %llu bytes / %llu inodes at %s; du %llu / %llu of %s; docker system df %llu bytes\n",
              static_cast<unsigned long long>(fs.used_bytes().value()),
              static_cast<unsigned long long>(fs.inodes_used().value()), fs.fs_id().mountpoint().c_str(),
              static_cast<unsigned long long>(before.first), static_cast<unsigned long long>(before.second),
              absl::StrJoin(store.dirs, " ").c_str(), static_cast<unsigned long long>(docker_bytes));
  EXPECT_GT(docker_bytes, 0u) << "the test images are there";
  EXPECT_GE(fs.used_bytes().value(), docker_bytes * 9 / 10);
}

}  // namespace
}  // namespace shim
