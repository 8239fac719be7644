// Pods cri-dockerd started, adopted by PodSandboxStatus (sandbox_adoption.cc): the fake
// Docker client holds their infra containers as cri-dockerd names and labels them, a
// real CniNetwork reads a fake CNI cache directory (its plugins faked), and a fake
// reader stands for the pods' network namespaces.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "shim/checkpoint_store.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/network/cni_network.h"
#include "shim/network/docker_bridge.h"
#include "tests/support/libcni_cache.h"
#include "tests/unit/fake_docker_client.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing_fakes::FakeDockerClient;
using json = nlohmann::json;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kNetwork[] = "k8s-pod-network";
constexpr char kConflist[] = R"({"cniVersion":"1.0.0","name":"k8s-pod-network","plugins":[
  {"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"10.244.1.0/24"}},
  {"type":"portmap","capabilities":{"portMappings":true}}]})";
// A dual-stack pod's result as libcni caches it: 0.4.0 (with "version") and 1.0.0
// (IPv6 listed first).
constexpr char kResult040[] = R"({"cniVersion":"0.4.0",
  "interfaces":[{"name":"cni0"},{"name":"veth1"},{"name":"eth0","sandbox":"/proc/4242/ns/net"}],
  "ips":[{"version":"4","interface":2,"address":"10.244.1.7/24","gateway":"10.244.1.1"},
         {"version":"6","interface":2,"address":"fd00:10:244:1::7/64","gateway":"fd00:10:244:1::1"}]})";
constexpr char kResult100[] = R"({"cniVersion":"1.0.0",
  "interfaces":[{"name":"cni0"},{"name":"eth0","sandbox":"/proc/4242/ns/net"}],
  "ips":[{"interface":1,"address":"fd00:10:244:1::8/64"},{"interface":1,"address":"10.244.1.8/24"}]})";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Stands for the pods' namespaces: addresses by netns path; counts its calls.
class FakeNetnsReader : public network::NetnsAddressReader {
 public:
  absl::StatusOr<std::vector<std::string>> GlobalAddresses(const std::string& netns_path,
                                                           const std::string& ifname) override {
    std::lock_guard lock(mu_);
    calls.push_back(absl::StrCat(netns_path, " ", ifname));
    if (auto it = answers.find(netns_path); it != answers.end()) return it->second;
    return absl::NotFoundError(absl::StrCat("cannot open network namespace ", netns_path, ": No such file or directory"));
  }
  std::vector<std::string> Calls() {
    std::lock_guard lock(mu_);
    return calls;
  }

  std::mutex mu_;
  std::map<std::string, absl::StatusOr<std::vector<std::string>>> answers;
  std::vector<std::string> calls;
};

// The plugins: records "<command> <type> <container>", succeeds without a result.
class RecordingExecutor : public network::PluginExecutor {
 public:
  explicit RecordingExecutor(std::shared_ptr<std::vector<std::string>> calls) : calls_(std::move(calls)) {}
  absl::StatusOr<std::string> Exec(const common::Context&, const std::string& type, const network::PluginRequest& req,
                                   const std::string&) override {
    calls_->push_back(absl::StrCat(req.command, " ", type, " ", req.container_id));
    return std::string();
  }

 private:
  std::shared_ptr<std::vector<std::string>> calls_;
};

class AdoptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/adoption_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    root_ = dir_ + "/dockershim";
    cri_dockerd_root_ = dir_ + "/cri-dockerd";
    fs::create_directories(cri_dockerd_root_ + "/sandbox");
    fs::create_directories(dir_ + "/net.d");
    std::ofstream(dir_ + "/net.d/10-pods.conflist") << kConflist;
    network::CniOptions cni;
    cni.conf_dir = dir_ + "/net.d";
    cni.cache_dir = dir_ + "/cni-cache";
    network_ = std::make_unique<network::CniNetwork>(cni, std::make_unique<RecordingExecutor>(plugin_calls_));
    docker_.AddImage({kPause});
    service_ = MakeService();
  }
  void TearDown() override {
    service_.reset();
    fs::remove_all(dir_);
  }

  std::unique_ptr<CriService> MakeService(network::NetworkPlugin* network = nullptr) {
    Options o;
    o.root_directory = root_;
    o.cri_dockerd_root_directory = cri_dockerd_root_;
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    o.netns_addresses = &netns_;
    o.clock = [this] { return now_; };
    auto s = std::make_unique<CriService>(o, docker_, network ? *network : *network_);
    EXPECT_TRUE(s->Init().ok());
    return s;
  }

  // An infra container as cri-dockerd makes it, running as `pid`.
  std::string CriDockerdPod(const std::string& name, int pid, const std::string& network_mode = "none") {
    json body = {{"Image", kPause},
                 {"Labels",
                  {{kContainerTypeLabel, kContainerTypeSandbox},
                   {kContainerNameLabel, "POD"},
                   {kPodNameLabel, name},
                   {kPodNamespaceLabel, "default"},
                   {kPodUidLabel, "uid-" + name}}},
                 {"HostConfig", {{"NetworkMode", network_mode}}}};
    auto id = docker_.CreateContainer(ctx_, absl::StrCat("k8s_POD_", name, "_default_uid-", name, "_0"), body);
    EXPECT_TRUE(id.ok()) << id.status();
    EXPECT_TRUE(docker_.StartContainer(ctx_, *id).ok());
    docker_.EditContainer(*id, [pid](dockerclient::ContainerInspect& c) { c.state.pid = pid; });
    return *id;
  }
  // cri-dockerd's checkpoint of the pod (core/checkpoint.go's JSON).
  std::string CriDockerdCheckpoint(const std::string& id, const std::string& name, bool host_network = false) {
    const std::string path = TheirCheckpoint(id);
    std::ofstream(path) << R"({"version":"v1","name":")" << name
                        << R"(","namespace":"default","data":{"port_mappings":[{"protocol":"tcp","container_port":80,"host_port":8080}])"
                        << (host_network ? R"(,"host_network":true)" : "") << R"(},"checksum":2881154383})";
    return ReadFile(path);
  }
  std::string CacheResult(const std::string& id, const std::string& result, const std::string& network = kNetwork) {
    return testsupport::WriteLibcniCacheFile(
        dir_ + "/cni-cache", network, id, "eth0",
        testsupport::LibcniCacheRecord(network, id, "eth0", kConflist, json::parse(result)).dump());
  }
  std::string CacheFile(const std::string& id) const {
    return absl::StrCat(dir_, "/cni-cache/results/", kNetwork, "-", id, "-eth0");
  }
  std::string OurCheckpoint(const std::string& id) const { return root_ + "/sandbox/" + id; }
  std::string TheirCheckpoint(const std::string& id) const { return cri_dockerd_root_ + "/sandbox/" + id; }
  SandboxCheckpoint Decoded(const std::string& path) const {
    auto c = DecodeCheckpoint(ReadFile(path));
    EXPECT_TRUE(c.ok()) << path << ": " << c.status();
    return c.value_or(SandboxCheckpoint());
  }

  absl::StatusOr<v1::PodSandboxStatus> Status(const std::string& id, CriService* service = nullptr) {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(id);
    req.set_verbose(true);
    auto resp = (service ? service : service_.get())->PodSandboxStatus(ctx_, req);
    if (!resp.ok()) return resp.status();
    last_info_ = json::parse(resp->info().at("info"));
    return resp->status();
  }
  // ip then additional_ips; empty when the status has none.
  std::vector<std::string> Ips(const std::string& id, CriService* service = nullptr) {
    auto status = Status(id, service);
    EXPECT_TRUE(status.ok()) << status.status();
    if (!status.ok()) return {};
    std::vector<std::string> ips;
    if (!status->network().ip().empty()) ips.push_back(status->network().ip());
    for (const auto& ip : status->network().additional_ips()) ips.push_back(ip.ip());
    return ips;
  }
  std::string Netns(int pid) const { return absl::StrCat("/proc/", pid, "/ns/net"); }

  std::string dir_, root_, cri_dockerd_root_;
  FakeDockerClient docker_;
  FakeNetnsReader netns_;
  std::shared_ptr<std::vector<std::string>> plugin_calls_ = std::make_shared<std::vector<std::string>>();
  std::unique_ptr<network::CniNetwork> network_;
  std::unique_ptr<CriService> service_;
  absl::Time now_ = absl::FromUnixSeconds(1767225600);
  json last_info_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
};

TEST_F(AdoptionTest, IpsOfA040CachedResultAreRecordedInOurCheckpoint) {
  const std::string id = CriDockerdPod("web", 101);
  const std::string theirs = CriDockerdCheckpoint(id, "web");
  CacheResult(id, kResult040);

  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.7", "fd00:10:244:1::7"));
  EXPECT_THAT(netns_.Calls(), IsEmpty()) << "the cache had them";
  SandboxCheckpoint ours = Decoded(OurCheckpoint(id));
  EXPECT_EQ(ours.ip, "10.244.1.7");
  EXPECT_THAT(ours.additional_ips, ElementsAre("fd00:10:244:1::7"));
  EXPECT_EQ(ours.network_name, kNetwork);
  EXPECT_EQ(ours.network_plugin, "cni");
  EXPECT_EQ(ours.netns_path, Netns(101));
  EXPECT_EQ(ours.adopted_from, "cri-dockerd");
  EXPECT_EQ(ours.name, "web");
  ASSERT_EQ(ours.port_mappings.size(), 1u) << "what cri-dockerd's checkpoint held";
  EXPECT_EQ(ours.port_mappings[0].host_port, 8080);
  EXPECT_EQ(ReadFile(TheirCheckpoint(id)), theirs) << "cri-dockerd's file is never rewritten";
  EXPECT_EQ(last_info_["cniNetwork"], kNetwork);
}

TEST_F(AdoptionTest, IpsOfA100CachedResultIpv4First) {
  const std::string id = CriDockerdPod("web", 101);
  CriDockerdCheckpoint(id, "web");
  CacheResult(id, kResult100);
  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.8", "fd00:10:244:1::8"));
}

TEST_F(AdoptionTest, IpsFromTheNetworkNamespaceWhenNothingIsCached) {
  const std::string id = CriDockerdPod("web", 102);
  CriDockerdCheckpoint(id, "web");
  netns_.answers[Netns(102)] = std::vector<std::string>{"10.244.1.9", "fd00:10:244:1::9"};

  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.9", "fd00:10:244:1::9"));
  EXPECT_THAT(netns_.Calls(), ElementsAre(Netns(102) + " eth0"));
  SandboxCheckpoint ours = Decoded(OurCheckpoint(id));
  EXPECT_EQ(ours.ip, "10.244.1.9");
  EXPECT_EQ(ours.network_name, "") << "no cache named it: torn down with the current config";
}

TEST_F(AdoptionTest, APodWithoutAnyCheckpointIsAdoptedFromItsLabels) {
  const std::string id = CriDockerdPod("lost", 103);
  CacheResult(id, kResult100);
  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.8", "fd00:10:244:1::8"));
  SandboxCheckpoint ours = Decoded(OurCheckpoint(id));
  EXPECT_EQ(ours.adopted_from, "infra-container-labels");
  EXPECT_EQ(ours.name, "lost");
  EXPECT_EQ(ours.namespace_, "default");
  EXPECT_EQ(ours.uid, "uid-lost");
  EXPECT_EQ(ours.network_name, kNetwork);
}

TEST_F(AdoptionTest, OursComeBeforeTheCacheWhichComesBeforeTheNamespace) {
  // Ours: a pod this shim's checkpoint knows.
  const std::string own = CriDockerdPod("own", 104);
  SandboxCheckpoint checkpoint;
  checkpoint.sandbox_id = own;
  checkpoint.network_plugin = "cni";
  checkpoint.ip = "10.244.1.50";
  {
    CheckpointStore store(root_);
    ASSERT_TRUE(store.Write(checkpoint).ok());
  }
  CacheResult(own, kResult040);
  netns_.answers[Netns(104)] = std::vector<std::string>{"10.244.1.51"};
  // The cache, over the namespace.
  const std::string cached = CriDockerdPod("cached", 105);
  CriDockerdCheckpoint(cached, "cached");
  CacheResult(cached, kResult100);
  netns_.answers[Netns(105)] = std::vector<std::string>{"10.244.1.52"};

  EXPECT_THAT(Ips(own), ElementsAre("10.244.1.50"));
  EXPECT_THAT(Ips(cached), ElementsAre("10.244.1.8", "fd00:10:244:1::8"));
  EXPECT_THAT(netns_.Calls(), IsEmpty());
}

TEST_F(AdoptionTest, HostNetworkAndDockerBridgePodsKeepWhatTheyReported) {
  const std::string host = CriDockerdPod("host", 106, "host");
  CriDockerdCheckpoint(host, "host", /*host_network=*/true);
  netns_.answers[Netns(106)] = std::vector<std::string>{"192.168.1.10"};
  EXPECT_THAT(Ips(host), IsEmpty());

  network::DockerBridgeNetwork bridge(docker_);
  auto on_bridge = MakeService(&bridge);
  const std::string pod = CriDockerdPod("bridged", 107, "bridge");
  docker_.EditContainer(pod, [](dockerclient::ContainerInspect& c) { c.ip_address = "172.17.0.5"; });
  netns_.answers[Netns(107)] = std::vector<std::string>{"172.17.0.5"};
  EXPECT_THAT(Ips(pod, on_bridge.get()), ElementsAre("172.17.0.5"));

  EXPECT_THAT(netns_.Calls(), IsEmpty());
  EXPECT_FALSE(fs::exists(OurCheckpoint(host)));
  EXPECT_FALSE(fs::exists(OurCheckpoint(pod)));
}

TEST_F(AdoptionTest, WrittenOnceThenAnsweredFromMemoryAtTodaysCost) {
  const std::string id = CriDockerdPod("web", 108);
  CriDockerdCheckpoint(id, "web");
  netns_.answers[Netns(108)] = std::vector<std::string>{"10.244.1.9"};

  int inspects = docker_.CallCount("InspectContainer");
  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.9"));
  EXPECT_EQ(docker_.CallCount("InspectContainer") - inspects, 2) << "the adopting call inspects once more";
  struct stat written;
  ASSERT_EQ(::stat(OurCheckpoint(id).c_str(), &written), 0);

  // What adoption read is gone: later answers come from memory.
  ASSERT_TRUE(fs::remove(TheirCheckpoint(id)));
  netns_.answers.clear();
  inspects = docker_.CallCount("InspectContainer");
  for (int i = 0; i < 20; ++i) EXPECT_THAT(Ips(id), ElementsAre("10.244.1.9"));
  EXPECT_EQ(docker_.CallCount("InspectContainer") - inspects, 20) << "one inspect per call, as for our own pods";
  EXPECT_EQ(netns_.Calls().size(), 1u);
  struct stat later;
  ASSERT_EQ(::stat(OurCheckpoint(id).c_str(), &later), 0);
  EXPECT_EQ(later.st_ino, written.st_ino) << "written once";
  EXPECT_EQ(later.st_mtim.tv_nsec, written.st_mtim.tv_nsec);
  EXPECT_EQ(later.st_mtim.tv_sec, written.st_mtim.tv_sec);

  // A restarted shim reads its own checkpoint.
  auto restarted = MakeService();
  EXPECT_THAT(Ips(id, restarted.get()), ElementsAre("10.244.1.9"));
  EXPECT_EQ(netns_.Calls().size(), 1u);
}

TEST_F(AdoptionTest, ASharedDirectoryKeepsCriDockerdsFileAndTheIpsInMemory) {
  cri_dockerd_root_ = root_;
  fs::create_directories(root_ + "/sandbox");
  service_ = MakeService();
  const std::string id = CriDockerdPod("web", 109);
  const std::string theirs = CriDockerdCheckpoint(id, "web");
  CacheResult(id, kResult040);

  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.7", "fd00:10:244:1::7"));
  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.7", "fd00:10:244:1::7"));
  EXPECT_EQ(ReadFile(TheirCheckpoint(id)), theirs);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(root_ + "/sandbox")) files.push_back(e.path().filename().string());
  EXPECT_THAT(files, ElementsAre(id)) << "no file of ours beside it, none set aside";

  // Each start adopts again, from the cache.
  auto restarted = MakeService();
  EXPECT_THAT(Ips(id, restarted.get()), ElementsAre("10.244.1.7", "fd00:10:244:1::7"));
  EXPECT_EQ(ReadFile(TheirCheckpoint(id)), theirs);
}

TEST_F(AdoptionTest, StopAndRemoveLeaveNothing) {
  const std::string id = CriDockerdPod("web", 110);
  CriDockerdCheckpoint(id, "web");
  CacheResult(id, kResult040);
  ASSERT_THAT(Ips(id), ElementsAre("10.244.1.7", "fd00:10:244:1::7"));

  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(id);
  ASSERT_TRUE(service_->StopPodSandbox(ctx_, stop).ok());
  EXPECT_THAT(*plugin_calls_, ElementsAre("DEL portmap " + id, "DEL bridge " + id)) << "with the cached config";
  EXPECT_FALSE(fs::exists(CacheFile(id)));
  EXPECT_TRUE(fs::exists(TheirCheckpoint(id))) << "until the pod is removed";

  v1::RemovePodSandboxRequest remove;
  remove.set_pod_sandbox_id(id);
  ASSERT_TRUE(service_->RemovePodSandbox(ctx_, remove).ok());
  EXPECT_FALSE(fs::exists(OurCheckpoint(id)));
  EXPECT_FALSE(fs::exists(TheirCheckpoint(id)));
  EXPECT_THAT(docker_.Containers(), IsEmpty());
  EXPECT_EQ(plugin_calls_->size(), 2u);
}

TEST_F(AdoptionTest, ACheckpointOnlyPodOfCriDockerdIsListedAndRemoved) {
  // cri-dockerd's pod whose infra container was removed behind its back.
  const std::string gone(64, 'd');
  CriDockerdCheckpoint(gone, "gone");
  v1::ListPodSandboxResponse list = *service_->ListPodSandbox(ctx_, v1::ListPodSandboxRequest());
  ASSERT_EQ(list.items_size(), 1);
  EXPECT_EQ(list.items(0).id(), gone);
  EXPECT_EQ(list.items(0).metadata().name(), "gone");
  EXPECT_EQ(list.items(0).state(), v1::SANDBOX_NOTREADY);

  v1::RemovePodSandboxRequest remove;
  remove.set_pod_sandbox_id(gone);
  ASSERT_TRUE(service_->RemovePodSandbox(ctx_, remove).ok());
  EXPECT_FALSE(fs::exists(TheirCheckpoint(gone)));
  EXPECT_EQ(service_->ListPodSandbox(ctx_, v1::ListPodSandboxRequest())->items_size(), 0);
}

TEST_F(AdoptionTest, ACorruptCriDockerdCheckpointIsLeftAloneAndThePodAdoptedFromItsLabels) {
  const std::string id = CriDockerdPod("web", 111);
  std::ofstream(TheirCheckpoint(id)) << "{\"version\":\"v1\",";
  CacheResult(id, kResult100);
  EXPECT_THAT(Ips(id), ElementsAre("10.244.1.8", "fd00:10:244:1::8"));
  EXPECT_EQ(ReadFile(TheirCheckpoint(id)), "{\"version\":\"v1\",");
  EXPECT_FALSE(fs::exists(TheirCheckpoint(id) + ".corrupt"));
  EXPECT_EQ(Decoded(OurCheckpoint(id)).adopted_from, "infra-container-labels");
}

TEST_F(AdoptionTest, ACachedResultWithoutIpOrNotJsonFallsThroughToTheNamespace) {
  const std::string no_ip = CriDockerdPod("noip", 112);
  CriDockerdCheckpoint(no_ip, "noip");
  CacheResult(no_ip, R"({"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/ns"}]})");
  netns_.answers[Netns(112)] = std::vector<std::string>{"10.244.1.12"};
  const std::string garbled = CriDockerdPod("garbled", 113);
  CriDockerdCheckpoint(garbled, "garbled");
  testsupport::WriteLibcniCacheFile(dir_ + "/cni-cache", kNetwork, garbled, "eth0", "not json at all");
  netns_.answers[Netns(113)] = std::vector<std::string>{"10.244.1.13"};

  EXPECT_THAT(Ips(no_ip), ElementsAre("10.244.1.12"));
  EXPECT_EQ(Decoded(OurCheckpoint(no_ip)).network_name, kNetwork) << "the cache still named the network";
  EXPECT_THAT(Ips(garbled), ElementsAre("10.244.1.13"));
  EXPECT_THAT(netns_.Calls(), ElementsAre(Netns(112) + " eth0", Netns(113) + " eth0"));
}

TEST_F(AdoptionTest, NoIpAnywhereIsAnsweredWithoutOneAndNotLookedForAgainAtOnce) {
  const std::string gone_netns = CriDockerdPod("gone", 114);  // the reader knows no such namespace
  CriDockerdCheckpoint(gone_netns, "gone");
  const std::string bare = CriDockerdPod("bare", 115);
  CriDockerdCheckpoint(bare, "bare");
  netns_.answers[Netns(115)] = std::vector<std::string>{};  // eth0 without a global address

  for (int i = 0; i < 10; ++i) {
    auto status = Status(gone_netns);
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_EQ(status->state(), v1::SANDBOX_READY);
    EXPECT_EQ(status->network().ip(), "");
    EXPECT_THAT(Ips(bare), IsEmpty());
  }
  EXPECT_THAT(netns_.Calls(), ElementsAre(Netns(114) + " eth0", Netns(115) + " eth0")) << "once in 30 s";
  EXPECT_FALSE(fs::exists(OurCheckpoint(gone_netns)));
  EXPECT_FALSE(fs::exists(OurCheckpoint(bare)));

  now_ += absl::Seconds(29);
  EXPECT_THAT(Ips(bare), IsEmpty());
  EXPECT_EQ(netns_.Calls().size(), 2u);
  now_ += absl::Seconds(2);
  netns_.answers[Netns(115)] = std::vector<std::string>{"10.244.1.15"};
  EXPECT_THAT(Ips(bare), ElementsAre("10.244.1.15"));
  EXPECT_EQ(netns_.Calls().size(), 3u);
}

TEST_F(AdoptionTest, AStoppedPodIsNotAdopted) {
  const std::string id = CriDockerdPod("web", 116);
  CriDockerdCheckpoint(id, "web");
  CacheResult(id, kResult040);
  ASSERT_TRUE(docker_.StopContainer(ctx_, id, {}).ok());
  auto status = Status(id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->state(), v1::SANDBOX_NOTREADY);
  EXPECT_EQ(status->network().ip(), "");
  EXPECT_FALSE(fs::exists(OurCheckpoint(id)));
}

}  // namespace
}  // namespace shim
