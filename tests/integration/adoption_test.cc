// A node switched from cri-dockerd: pods set up the way cri-dockerd sets them up (an
// infra container with its names and labels, the network added by the CNI plugins with
// libcni's cache file, cri-dockerd's checkpoint in its own root directory, none of
// ours), then the shim binary started with both directories. It reports each pod's IP
// (from the CNI cache, or from the pod's network namespace when the cache is gone),
// records it, and after StopPodSandbox + RemovePodSandbox nothing is left.
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/cri.h"
#include "shim/checkpoint_store.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/daemon.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"
#include "tests/support/libcni_cache.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using json = nlohmann::json;
using testenv::Daemon;
using testenv::ReadFile;
using testenv::Sh;
using Clock = std::chrono::steady_clock;

// A pod as cri-dockerd left it.
struct CriDockerdPod {
  std::string name, id, ip, checkpoint;
};

class AdoptionIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    static int next = 0;
    n_ = 230 + (next++ % 5);  // dsbr230..234, 10.99.230-234.0/24: no other test file uses them
    bridge_ = absl::StrCat("dsbr", n_);
    network_ = absl::StrCat("dstest-adoptnet-", n_);
    std::mt19937 rng{std::random_device{}()};
    namespace_ = absl::StrCat("dstest-adopt-", n_, "-", rng() % 100000);
    Sh("docker ps -aq --filter name=_dstest-adopt-" + std::to_string(n_) + "- | xargs -r docker rm -f");
    Sh("ip link del " + bridge_);
    dir_ = fs::temp_directory_path() / absl::StrCat("dsadoption-", getpid(), "-", n_);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "net.d");
    fs::create_directories(dir_ / "cri-dockerd" / "sandbox");
    conflist_ = absl::StrCat(R"({"cniVersion":"1.0.0","name":")", network_,
                             R"(","plugins":[{"type":"bridge","bridge":")", bridge_,
                             R"(","isGateway":true,"ipMasq":false,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.99.)",
                             n_, R"(.0/24"}]],"dataDir":")", (dir_ / "ipam").string(), R"("}}]})");
    std::ofstream(dir_ / "net.d" / "10-adopt.conflist") << conflist_;
    socket_ = (dir_ / "shim.sock").string();
  }
  void TearDown() override {
    shim_.reset();
    // What a failed test left: the plugins release the addresses, docker the containers.
    for (const CriDockerdPod& pod : pods_) {
      Plugin("DEL", pod.id, "");
    }
    Sh("docker ps -aq --filter name=_" + namespace_ + "_ | xargs -r docker rm -f");
    Sh("ip link del " + bridge_);
    fs::remove_all(dir_);
  }

  // Runs the bridge plugin as libcni does for a one-plugin list (the plugin object with
  // the list's name and cniVersion on stdin, CNI_ARGS as cri-dockerd passes them); its stdout.
  std::string Plugin(const std::string& command, const std::string& id, const std::string& netns) {
    json config = json::parse(conflist_)["plugins"][0];
    config["name"] = network_;
    config["cniVersion"] = "1.0.0";
    const fs::path stdin_file = dir_ / absl::StrCat("stdin-", command, "-", id.substr(0, 12));
    std::ofstream(stdin_file) << config.dump();
    return Sh(absl::StrCat("CNI_COMMAND=", command, " CNI_CONTAINERID=", id, " CNI_NETNS=", netns,
                           " CNI_IFNAME=eth0 CNI_PATH=", testenv::CniBinDir(),
                           " CNI_ARGS='IgnoreUnknown=1;K8S_POD_NAMESPACE=", namespace_, ";K8S_POD_NAME=web;",
                           "K8S_POD_INFRA_CONTAINER_ID=", id, "' ", testenv::CniBinDir(), "/bridge < ", stdin_file.string()));
  }

  // An infra container named and labelled as cri-dockerd makes it, on network "none",
  // attached by the plugins with libcni's cache file, and cri-dockerd's checkpoint.
  CriDockerdPod StartCriDockerdPod(const std::string& name) {
    CriDockerdPod pod;
    pod.name = name;
    const std::string uid = "uid-" + name;
    pod.id = std::string(absl::StripTrailingAsciiWhitespace(Sh(absl::StrCat(
        "docker run -d --name k8s_POD_", name, "_", namespace_, "_", uid, "_0 --network none",
        " --label io.kubernetes.docker.type=podsandbox --label io.kubernetes.container.name=POD",
        " --label io.kubernetes.pod.name=", name, " --label io.kubernetes.pod.namespace=", namespace_,
        " --label io.kubernetes.pod.uid=", uid, " --label app=", name,
        " --label annotation.kubernetes.io/config.source=api ", testenv::PauseImage()))));
    if (pod.id.size() != 64) {
      ADD_FAILURE() << "docker run: \"" << pod.id << "\"";
      return pod;
    }
    pods_.push_back(pod);
    const std::string pid(absl::StripTrailingAsciiWhitespace(Sh("docker inspect -f '{{.State.Pid}}' " + pod.id)));
    const std::string netns = "/proc/" + pid + "/ns/net";
    const std::string out = Plugin("ADD", pod.id, netns);
    const json result = json::parse(out, nullptr, /*allow_exceptions=*/false);
    if (!result.is_object() || !result.contains("ips")) {
      ADD_FAILURE() << "bridge ADD printed: " << out;
      return pod;
    }
    const std::string address = result["ips"][0]["address"].get<std::string>();
    pod.ip = address.substr(0, address.find('/'));
    testsupport::WriteLibcniCacheFile(
        (dir_ / "cache").string(), network_, pod.id, "eth0",
        testsupport::LibcniCacheRecord(network_, pod.id, "eth0", conflist_, result, netns).dump());
    std::ofstream(TheirCheckpoint(pod.id))
        << R"({"version":"v1","name":")" << name << R"(","namespace":")" << namespace_
        << R"(","data":{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":0}]},"checksum":1234567890})";
    pod.checkpoint = ReadFile(TheirCheckpoint(pod.id));
    return pod;
  }

  void StartShim() {
    ::unlink(socket_.c_str());
    shim_ = std::make_unique<Daemon>(
        dir_, std::vector<std::string>{"--container-runtime-endpoint", "unix://" + socket_, "--docker-endpoint",
                                       testenv::DockerEndpoint(), "--network-plugin", "cni", "--cni-bin-dir",
                                       testenv::CniBinDir(), "--cni-conf-dir", (dir_ / "net.d").string(),
                                       "--cni-cache-dir", (dir_ / "cache").string(), "--root-directory",
                                       (dir_ / "root").string(), "--cri-dockerd-root-directory",
                                       (dir_ / "cri-dockerd").string(), "--pod-infra-container-image",
                                       testenv::PauseImage(), "--log-level", "debug"});
    ASSERT_TRUE(testenv::WaitForSocket(socket_, std::chrono::seconds(30))) << shim_->Stderr();
    cri_.emplace(socket_, std::chrono::seconds(60));
  }

  absl::StatusOr<v1::PodSandboxStatus> PodStatus(const std::string& id) {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(id);
    v1::PodSandboxStatusResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Status s = cri_->runtime().PodSandboxStatus(&ctx, req, &resp);
    if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    return resp.status();
  }
  // The pod's IP as PodSandboxStatus reports it, and how long the call took.
  std::string TimedIp(const std::string& id, double* ms) {
    const auto start = Clock::now();
    auto status = PodStatus(id);
    *ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    EXPECT_TRUE(status.ok()) << status.status();
    return status.ok() ? status->network().ip() : "";
  }
  // The first call, then 200 more: what each costs (printed for the report). A call for
  // `warm_up` first, so that the caches every first status fills (Docker's /info, the
  // pause image) are not counted.
  void ExpectIpAndPrintCosts(const CriDockerdPod& warm_up, const CriDockerdPod& pod, const std::string& source) {
    double first_ms = 0;
    EXPECT_EQ(TimedIp(warm_up.id, &first_ms), warm_up.ip) << shim_->Stderr();
    EXPECT_EQ(TimedIp(pod.id, &first_ms), pod.ip) << shim_->Stderr();
    std::vector<double> later;
    for (int i = 0; i < 200; ++i) {
      double ms = 0;
      ASSERT_EQ(TimedIp(pod.id, &ms), pod.ip);
      later.push_back(ms);
    }
    std::sort(later.begin(), later.end());
    std::printf("PodSandboxStatus over gRPC, pod adopted from %s: first (adopting) call %.2f ms; later calls p50 %.2f ms,"
                " p90 %.2f ms (200 calls)\n",
                source.c_str(), first_ms, later[100], later[180]);
  }

  std::string OurCheckpoint(const std::string& id) const { return (dir_ / "root" / "sandbox" / id).string(); }
  std::string TheirCheckpoint(const std::string& id) const { return (dir_ / "cri-dockerd" / "sandbox" / id).string(); }
  std::string CacheFile(const std::string& id) const {
    return (dir_ / "cache" / "results" / absl::StrCat(network_, "-", id, "-eth0")).string();
  }
  fs::path IpFile(const std::string& ip) const { return dir_ / "ipam" / network_ / ip; }

  void ExpectAdoptedFrom(const CriDockerdPod& pod, const std::string& network_name) {
    auto ours = shim::DecodeCheckpoint(ReadFile(OurCheckpoint(pod.id)));
    ASSERT_TRUE(ours.ok()) << ours.status();
    EXPECT_EQ(ours->ip, pod.ip);
    EXPECT_EQ(ours->adopted_from, "cri-dockerd");
    EXPECT_EQ(ours->name, pod.name);
    EXPECT_EQ(ours->network_name, network_name);
    EXPECT_EQ(ReadFile(TheirCheckpoint(pod.id)), pod.checkpoint) << "cri-dockerd's file is never rewritten";
  }

  // StopPodSandbox + RemovePodSandbox, then: no container, no cache file, no checkpoint
  // (ours or cri-dockerd's), no host-local reservation.
  void ExpectStopAndRemoveLeaveNothing(const CriDockerdPod& pod) {
    ASSERT_TRUE(fs::exists(IpFile(pod.ip)));
    grpc::Status s = cri_->StopAndRemovePodSandbox(pod.id);
    ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << shim_->Stderr();
    EXPECT_EQ(Sh("docker ps -aq --no-trunc --filter id=" + pod.id), "");
    EXPECT_FALSE(fs::exists(CacheFile(pod.id)));
    EXPECT_FALSE(fs::exists(OurCheckpoint(pod.id)));
    EXPECT_FALSE(fs::exists(TheirCheckpoint(pod.id)));
    EXPECT_FALSE(fs::exists(IpFile(pod.ip))) << "host-local still holds " << pod.ip;
    pods_.erase(std::remove_if(pods_.begin(), pods_.end(), [&](const CriDockerdPod& p) { return p.id == pod.id; }),
                pods_.end());
  }

  int n_ = 0;
  std::string bridge_, network_, namespace_, socket_, conflist_;
  fs::path dir_;
  std::unique_ptr<Daemon> shim_;
  std::optional<testenv::CriClient> cri_;
  std::vector<CriDockerdPod> pods_;  // released in TearDown if a test left them
};

TEST_F(AdoptionIntegration, ThePodIpComesFromLibcnisCache) {
  const CriDockerdPod warm_up = StartCriDockerdPod("first");
  const CriDockerdPod pod = StartCriDockerdPod("cached");
  ASSERT_FALSE(warm_up.ip.empty());
  ASSERT_FALSE(pod.ip.empty());
  ASSERT_NO_FATAL_FAILURE(StartShim());
  EXPECT_FALSE(fs::exists(OurCheckpoint(pod.id))) << "nothing adopted before a status asks";

  ExpectIpAndPrintCosts(warm_up, pod, "the CNI cache");
  ExpectAdoptedFrom(pod, network_);
  EXPECT_THAT(shim_->Stderr(), ::testing::HasSubstr("adopted pod " + namespace_ + "/cached"));
  ExpectStopAndRemoveLeaveNothing(pod);
  ExpectStopAndRemoveLeaveNothing(warm_up);
}

TEST_F(AdoptionIntegration, ThePodIpComesFromItsNetworkNamespaceWithoutACache) {
  const CriDockerdPod warm_up = StartCriDockerdPod("first");
  const CriDockerdPod pod = StartCriDockerdPod("uncached");
  ASSERT_FALSE(warm_up.ip.empty());
  ASSERT_FALSE(pod.ip.empty());
  ASSERT_TRUE(fs::remove(CacheFile(pod.id)));
  ASSERT_NO_FATAL_FAILURE(StartShim());

  ExpectIpAndPrintCosts(warm_up, pod, "the network namespace");
  ExpectAdoptedFrom(pod, "");
  EXPECT_THAT(shim_->Stderr(), ::testing::HasSubstr("from the network namespace (eth0 in /proc/"));
  // The recorded IP survives a restart without the namespace being read again.
  shim_.reset();
  ASSERT_NO_FATAL_FAILURE(StartShim());
  auto status = PodStatus(pod.id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->network().ip(), pod.ip);
  EXPECT_THAT(shim_->Stderr(), ::testing::Not(::testing::HasSubstr("adopted pod")));
  ExpectStopAndRemoveLeaveNothing(pod);
  ExpectStopAndRemoveLeaveNothing(warm_up);
}

}  // namespace
