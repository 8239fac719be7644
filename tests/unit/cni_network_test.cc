// CniNetwork's orchestration (ADD chain, rollback, cache, DEL, config rescans)
// against a fake PluginExecutor; tests/integration/cni_network_test.cc runs the
// real plugins.
#include "shim/network/cni_network.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/escaping.h"
#include "tests/support/libcni_cache.h"

namespace network {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Call {
  std::string type, command;
  json config;
  PluginRequest req;
  common::Context ctx;  // what the plugin was run under
  std::string Name() const { return command + " " + type; }
};

struct FakeState {
  std::vector<Call> calls;
  std::map<std::string, absl::Status> errors;  // "ADD portmap" -> error
  json ip_result = json::parse(
      R"({"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/ns"}],
          "ips":[{"address":"fd00::5/64","interface":0},{"address":"10.88.0.5/16","interface":0}]})");
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Call& c : calls) out.push_back(c.Name());
    return out;
  }
};

// The first plugin of a chain "allocates" ip_result; later ones pass prevResult on,
// adding an interface so that chaining is visible.
class FakeExecutor : public PluginExecutor {
 public:
  explicit FakeExecutor(std::shared_ptr<FakeState> state) : state_(std::move(state)) {}
  absl::StatusOr<std::string> Exec(const common::Context& ctx, const std::string& type, const PluginRequest& req,
                                   const std::string& stdin_config) override {
    Call call{type, req.command, json::parse(stdin_config), req, ctx};
    state_->calls.push_back(call);
    if (auto it = state_->errors.find(call.Name()); it != state_->errors.end()) return it->second;
    if (req.command != "ADD") return std::string();
    json result = call.config.contains("prevResult") ? call.config["prevResult"] : state_->ip_result;
    result["interfaces"].push_back({{"name", "from-" + type}});
    return result.dump();
  }

 private:
  std::shared_ptr<FakeState> state_;
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "cni_network_test.XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

const char kChain[] = R"({"cniVersion":"1.0.0","name":"podnet","plugins":[
  {"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"10.88.0.0/16"}},
  {"type":"portmap","capabilities":{"portMappings":true}},
  {"type":"bandwidth","capabilities":{"bandwidth":true}}]})";
const char kSandbox[] = "0123456789abcdef";

class CniNetworkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(conf_dir());
    Recreate(absl::ZeroDuration());
    req_.pod_name = "web";
    req_.pod_namespace = "prod";
    req_.pod_uid = "uid-1";
    req_.sandbox_id = kSandbox;
    req_.netns_path = "/var/run/docker/netns/abc";
    req_.port_mappings = {{"tcp", 80, 8080, ""}};
  }
  void Recreate(absl::Duration rescan_interval) {
    CniOptions options;
    options.bin_dirs = {"/nonexistent"};
    options.conf_dir = conf_dir();
    options.cache_dir = dir_.path() + "/cache";
    options.rescan_interval = rescan_interval;
    network_ = std::make_unique<CniNetwork>(options, std::make_unique<FakeExecutor>(state_));
  }
  std::string conf_dir() const { return dir_.path() + "/net.d"; }
  void WriteConf(const std::string& name, const std::string& content) {
    std::ofstream(conf_dir() + "/" + name) << content;
  }
  std::string CacheFile() const { return dir_.path() + "/cache/results/podnet-" + kSandbox + "-eth0"; }

  TempDir dir_;
  std::shared_ptr<FakeState> state_ = std::make_shared<FakeState>();
  std::unique_ptr<CniNetwork> network_;
  PodNetworkRequest req_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
};

TEST_F(CniNetworkTest, Identity) {
  EXPECT_EQ(network_->Name(), "cni");
  EXPECT_EQ(network_->DockerNetworkMode(), "none");
}

TEST_F(CniNetworkTest, SetUpRunsAddThroughTheChainInOrder) {
  WriteConf("10-podnet.conflist", kChain);
  auto status = network_->SetUp(ctx_, req_);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->ip, "10.88.0.5");
  EXPECT_THAT(status->additional_ips, ElementsAre("fd00::5"));
  EXPECT_EQ(status->network_name, "podnet");
  EXPECT_EQ(status->interface, "eth0");

  ASSERT_THAT(state_->names(), ElementsAre("ADD bridge", "ADD portmap", "ADD bandwidth"));
  const auto& calls = state_->calls;
  for (const Call& c : calls) {
    EXPECT_EQ(c.req.container_id, kSandbox);
    EXPECT_EQ(c.req.netns, "/var/run/docker/netns/abc");
    EXPECT_EQ(c.req.ifname, "eth0");
    EXPECT_EQ(c.req.cni_args,
              "IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=0123456789abcdef;"
              "K8S_POD_UID=uid-1");
    EXPECT_EQ(c.config["name"], "podnet");
    EXPECT_EQ(c.config["cniVersion"], "1.0.0");
  }
  EXPECT_FALSE(calls[0].config.contains("prevResult"));
  EXPECT_FALSE(calls[0].config.contains("runtimeConfig"));
  EXPECT_EQ(calls[1].config["prevResult"]["interfaces"].back()["name"], "from-bridge");
  EXPECT_EQ(calls[1].config["runtimeConfig"],
            json::parse(R"({"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]})"));
  EXPECT_EQ(calls[2].config["prevResult"]["interfaces"].back()["name"], "from-portmap");
  EXPECT_FALSE(calls[2].config.contains("runtimeConfig")) << "no bandwidth limit was requested";
}

TEST_F(CniNetworkTest, SetUpWritesLibcniCompatibleCache) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  EXPECT_EQ(network_->CacheFile("podnet", kSandbox), CacheFile());
  json cache = json::parse(ReadFile(CacheFile()), nullptr, false);
  ASSERT_TRUE(cache.is_object()) << ReadFile(CacheFile());
  EXPECT_EQ(cache["kind"], "cniCacheV1");
  EXPECT_EQ(cache["containerId"], kSandbox);
  EXPECT_EQ(cache["networkName"], "podnet");
  EXPECT_EQ(cache["ifName"], "eth0");
  EXPECT_EQ(cache["netns"], "/var/run/docker/netns/abc");
  EXPECT_EQ(cache["cniArgs"][1], json::parse(R"(["K8S_POD_NAMESPACE","prod"])"));
  EXPECT_EQ(cache["capabilityArgs"]["portMappings"][0]["hostPort"], 8080);
  EXPECT_EQ(cache["result"]["interfaces"].back()["name"], "from-bandwidth");
  std::string config;
  ASSERT_TRUE(absl::Base64Unescape(cache["config"].get<std::string>(), &config));
  EXPECT_EQ(json::parse(config), json::parse(kChain));
  // Only the final file is left: the temp file was renamed.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path() + "/cache/results"),
                          std::filesystem::directory_iterator()),
            1);
}

TEST_F(CniNetworkTest, FailedAddRollsBackTheWholeList) {
  WriteConf("10-podnet.conflist", kChain);
  state_->errors["ADD portmap"] = absl::InternalError("CNI plugin portmap failed (ADD): iptables is locked");
  auto status = network_->SetUp(ctx_, req_);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(status.status().message(), "CNI network podnet: CNI plugin portmap failed (ADD): iptables is locked");
  EXPECT_THAT(state_->names(), ElementsAre("ADD bridge", "ADD portmap", "DEL bandwidth", "DEL portmap", "DEL bridge"));
  // DEL gets what ADD produced so far, so the bridge plugin knows what to release.
  EXPECT_EQ(state_->calls[4].config["prevResult"]["interfaces"].back()["name"], "from-bridge");
  EXPECT_FALSE(std::filesystem::exists(CacheFile()));
}

TEST_F(CniNetworkTest, RollbackIsBestEffort) {
  WriteConf("10-podnet.conflist", kChain);
  state_->errors["ADD bandwidth"] = absl::InternalError("CNI plugin bandwidth failed (ADD): no ifb");
  state_->errors["DEL portmap"] = absl::InternalError("CNI plugin portmap failed (DEL): also broken");
  auto status = network_->SetUp(ctx_, req_);
  EXPECT_THAT(status.status().message(), HasSubstr("bandwidth failed (ADD): no ifb"));
  EXPECT_THAT(state_->names(),
              ElementsAre("ADD bridge", "ADD portmap", "ADD bandwidth", "DEL bandwidth", "DEL portmap", "DEL bridge"));
}

TEST_F(CniNetworkTest, ResultWithoutAddressIsAFailure) {
  WriteConf("10-podnet.conflist", R"({"cniVersion":"1.0.0","name":"podnet","plugins":[{"type":"noip"}]})");
  state_->ip_result = json::parse(R"({"cniVersion":"1.0.0"})");
  auto status = network_->SetUp(ctx_, req_);
  EXPECT_THAT(status.status().message(), HasSubstr("no IP address"));
  EXPECT_THAT(state_->names(), ElementsAre("ADD noip", "DEL noip"));
}

TEST_F(CniNetworkTest, SetUpRejectsBadRequests) {
  WriteConf("10-podnet.conflist", kChain);
  PodNetworkRequest bad = req_;
  bad.sandbox_id = "../x";
  EXPECT_EQ(network_->SetUp(ctx_, bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = req_;
  bad.netns_path.clear();
  EXPECT_EQ(network_->SetUp(ctx_, bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(state_->calls.empty());
}

TEST_F(CniNetworkTest, RecordedAttachmentsAreTheCacheFilesThisShimWrote) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  // One that cri-dockerd (or another runtime sharing the dir) wrote: not ours to release.
  std::ofstream(dir_.path() + "/cache/results/podnet-" + std::string(64, 'c') + "-eth0")
      << R"({"kind":"cniCacheV1","containerId":")" << std::string(64, 'c') << R"(","networkName":"podnet"})";
  std::vector<RecordedAttachment> found = network_->RecordedAttachments();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].network_name, "podnet");
  EXPECT_EQ(found[0].sandbox_id, kSandbox);
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "podnet").ok());
  EXPECT_TRUE(network_->RecordedAttachments().empty());
}

TEST_F(CniNetworkTest, RemoveInterruptedWritesTakesOnlyOurTempFiles) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  const std::string results = dir_.path() + "/cache/results/";
  const std::string cache = network_->CacheFile("podnet", kSandbox);
  // A kill between WriteFileAtomically's temp file and its rename leaves this.
  std::ofstream(cache + ".tmp.a1B2c3") << "{";
  std::ofstream(results + "other-runtime.tmp") << "{";
  EXPECT_THAT(network_->RemoveInterruptedWrites(), ElementsAre(cache + ".tmp.a1B2c3"));
  EXPECT_TRUE(std::filesystem::exists(cache));
  EXPECT_TRUE(std::filesystem::exists(results + "other-runtime.tmp"));
}

TEST_F(CniNetworkTest, TearDownUsesTheCachedConfigAfterTheConfDirChanged) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  json added = state_->calls.back().config;
  std::filesystem::remove(conf_dir() + "/10-podnet.conflist");
  WriteConf("05-other.conflist", R"({"cniVersion":"1.0.0","name":"other","plugins":[{"type":"ptp"}]})");
  ASSERT_TRUE(network_->Ready().ok());
  state_->calls.clear();

  PodNetworkRequest teardown = req_;
  teardown.port_mappings.clear();  // the caller may no longer know them
  teardown.netns_path = "/var/run/docker/netns/gone";
  ASSERT_TRUE(network_->TearDown(ctx_, teardown, "podnet").ok());
  ASSERT_THAT(state_->names(), ElementsAre("DEL bandwidth", "DEL portmap", "DEL bridge"));
  const Call& portmap = state_->calls[1];
  EXPECT_EQ(portmap.config["name"], "podnet");
  EXPECT_EQ(portmap.config["runtimeConfig"]["portMappings"][0]["hostPort"], 8080) << "cached capability args";
  EXPECT_EQ(portmap.config["prevResult"]["interfaces"].back()["name"], "from-bandwidth") << "cached final result";
  EXPECT_EQ(portmap.req.netns, "/var/run/docker/netns/gone") << "the caller's netns, not the cached one";
  EXPECT_EQ(portmap.req.cni_args, state_->calls[0].req.cni_args);
  EXPECT_FALSE(std::filesystem::exists(CacheFile()));
}

TEST_F(CniNetworkTest, TearDownWithoutCacheUsesTheCurrentConfigAndIsIdempotent) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "podnet").ok());
  state_->calls.clear();
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "podnet").ok());
  ASSERT_THAT(state_->names(), ElementsAre("DEL bandwidth", "DEL portmap", "DEL bridge"));
  EXPECT_FALSE(state_->calls[0].config.contains("prevResult"));
  EXPECT_EQ(state_->calls[1].config["runtimeConfig"]["portMappings"][0]["hostPort"], 8080);
}

TEST_F(CniNetworkTest, TearDownBefore040SendsNoPrevResult) {
  WriteConf("10-podnet.conflist",
            R"({"cniVersion":"0.3.1","name":"podnet","plugins":[{"type":"bridge"},{"type":"portmap"}]})");
  state_->ip_result = json::parse(R"({"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.88.0.9/16"}]})");
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  state_->calls.clear();
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "podnet").ok());
  ASSERT_THAT(state_->names(), ElementsAre("DEL portmap", "DEL bridge"));
  for (const Call& c : state_->calls) EXPECT_FALSE(c.config.contains("prevResult"));
}

TEST_F(CniNetworkTest, FailedDelKeepsTheCacheForTheRetry) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  state_->calls.clear();
  state_->errors["DEL portmap"] = absl::UnavailableError("CNI plugin portmap failed (DEL): try again");
  absl::Status s = network_->TearDown(ctx_, req_, "podnet");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "CNI network podnet: CNI plugin portmap failed (DEL): try again");
  // An address must not be released while portmap may still forward to it.
  EXPECT_THAT(state_->names(), ElementsAre("DEL bandwidth", "DEL portmap"));
  EXPECT_TRUE(std::filesystem::exists(CacheFile()));

  state_->errors.clear();
  state_->calls.clear();
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "podnet").ok());
  EXPECT_EQ(state_->calls[2].config["prevResult"]["interfaces"].back()["name"], "from-bandwidth");
  EXPECT_FALSE(std::filesystem::exists(CacheFile()));
}

// kubeadm reset gives StopPodSandbox 2 s and asks again when it runs out: DELs killed
// at each deadline would never finish on a slow node. Started, they run to their end.
TEST_F(CniNetworkTest, TearDownOutlivesTheCallersShortDeadlineAndCancellation) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  state_->calls.clear();
  common::Context impatient = common::Context::WithTimeout(absl::Seconds(2));
  impatient.is_cancelled = [] { return true; };  // the caller has given up already
  ASSERT_TRUE(network_->TearDown(impatient, req_, "podnet").ok());
  ASSERT_THAT(state_->names(), ElementsAre("DEL bandwidth", "DEL portmap", "DEL bridge"));
  for (const Call& c : state_->calls) {
    EXPECT_FALSE(c.ctx.Cancelled()) << c.Name();
    EXPECT_GE(c.ctx.deadline, absl::Now() + absl::Seconds(25)) << c.Name();
  }
  EXPECT_FALSE(std::filesystem::exists(CacheFile()));

  // A later deadline of the caller's stays.
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  state_->calls.clear();
  const common::Context patient = common::Context::WithTimeout(absl::Minutes(5));
  ASSERT_TRUE(network_->TearDown(patient, req_, "podnet").ok());
  ASSERT_FALSE(state_->calls.empty());
  for (const Call& c : state_->calls) EXPECT_EQ(c.ctx.deadline, patient.deadline) << c.Name();
}

TEST_F(CniNetworkTest, TearDownWithNothingToGoOnSucceeds) {
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "podnet").ok());
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "").ok());
  EXPECT_TRUE(state_->calls.empty());
  EXPECT_EQ(network_->TearDown(ctx_, req_, "../../etc").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CniNetworkTest, BrokenCacheFallsBackToTheCurrentConfig) {
  WriteConf("10-podnet.conflist", kChain);
  std::filesystem::create_directories(dir_.path() + "/cache/results");
  std::ofstream(CacheFile()) << R"({"kind":"cniCacheV1","config":"%%%"})";
  ASSERT_TRUE(network_->TearDown(ctx_, req_, "podnet").ok());
  EXPECT_THAT(state_->names(), ElementsAre("DEL bandwidth", "DEL portmap", "DEL bridge"));
  EXPECT_FALSE(std::filesystem::exists(CacheFile()));
}

// What cri-dockerd's libcni leaves for a dual-stack pod: a 0.4.0 result (with "version")
// and a 1.0.0 one (without, IPv6 first). The host-side interfaces carry no sandbox.
const char kResult040[] = R"({"cniVersion":"0.4.0",
  "interfaces":[{"name":"cni0","mac":"aa:aa:aa:aa:aa:aa"},{"name":"veth1","mac":"bb:bb:bb:bb:bb:bb"},
                {"name":"eth0","mac":"cc:cc:cc:cc:cc:cc","sandbox":"/proc/42/ns/net"}],
  "ips":[{"version":"4","interface":2,"address":"10.244.1.7/24","gateway":"10.244.1.1"},
         {"version":"6","interface":2,"address":"fd00:10:244:1::7/64","gateway":"fd00:10:244:1::1"}],
  "dns":{}})";
const char kResult100[] = R"({"cniVersion":"1.0.0",
  "interfaces":[{"name":"cni0","mac":"aa:aa:aa:aa:aa:aa"},{"name":"eth0","mac":"cc:cc:cc:cc:cc:cc","sandbox":"/proc/42/ns/net"}],
  "ips":[{"interface":1,"address":"fd00:10:244:1::8/64"},{"interface":1,"address":"10.244.1.8/24"},
         {"interface":0,"address":"10.244.1.1/24"}]})";

class CachedAttachmentTest : public CniNetworkTest {
 protected:
  std::string Write(const std::string& network, const std::string& ifname, const std::string& result,
                    const std::string& id = kSandbox) {
    return testsupport::WriteLibcniCacheFile(
        dir_.path() + "/cache", network, id, ifname,
        testsupport::LibcniCacheRecord(network, id, ifname, kChain, json::parse(result)).dump());
  }
};

TEST_F(CachedAttachmentTest, ReadsA040ResultAsLibcniWroteIt) {
  const std::string file = Write("k8s-pod-network", "eth0", kResult040);
  auto cached = network_->CachedAttachmentOf(kSandbox);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(cached->file, file);
  EXPECT_EQ(cached->network.network_name, "k8s-pod-network");
  EXPECT_EQ(cached->network.interface, "eth0");
  EXPECT_EQ(cached->network.ip, "10.244.1.7");
  EXPECT_THAT(cached->network.additional_ips, ElementsAre("fd00:10:244:1::7"));
  EXPECT_TRUE(state_->calls.empty()) << "reading the cache runs no plugin";
}

TEST_F(CachedAttachmentTest, ReadsA100ResultIpv4First) {
  Write("podnet", "eth0", kResult100);
  auto cached = network_->CachedAttachmentOf(kSandbox);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(cached->network.ip, "10.244.1.8");
  EXPECT_THAT(cached->network.additional_ips, ElementsAre("fd00:10:244:1::8")) << "not the bridge's address";
}

TEST_F(CachedAttachmentTest, TakesTheInterfaceTheRecordNames) {
  Write("podnet", "net1",
        R"({"cniVersion":"1.0.0","interfaces":[{"name":"net1","sandbox":"/ns"}],"ips":[{"interface":0,"address":"10.9.0.3/16"}]})");
  auto cached = network_->CachedAttachmentOf(kSandbox);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(cached->network.interface, "net1");
  EXPECT_EQ(cached->network.ip, "10.9.0.3");
}

TEST_F(CachedAttachmentTest, NothingCachedIsNotFound) {
  EXPECT_EQ(network_->CachedAttachmentOf(kSandbox).status().code(), absl::StatusCode::kNotFound);
  // Another sandbox whose ID starts with this one's.
  Write("podnet", "eth0", kResult100, std::string(kSandbox) + "ff");
  EXPECT_EQ(network_->CachedAttachmentOf(kSandbox).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(network_->CachedAttachmentOf("../x").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CachedAttachmentTest, AResultWithoutAddressNamesNoIp) {
  Write("podnet", "eth0", R"({"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/ns"}]})");
  auto cached = network_->CachedAttachmentOf(kSandbox);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(cached->network.network_name, "podnet");
  EXPECT_EQ(cached->network.ip, "");
  EXPECT_TRUE(cached->network.additional_ips.empty());
}

TEST_F(CachedAttachmentTest, UnusableRecordsSayWhy) {
  const std::string file = testsupport::WriteLibcniCacheFile(dir_.path() + "/cache", "podnet", kSandbox, "eth0", "{not json");
  auto broken = network_->CachedAttachmentOf(kSandbox);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr(file + ": not JSON"));

  std::ofstream(file) << R"({"kind":"cniCacheV1","containerId":"someone-else","networkName":"podnet","ifName":"eth0"})";
  EXPECT_THAT(network_->CachedAttachmentOf(kSandbox).status().message(), HasSubstr("containerId"));
  std::ofstream(file) << R"({"kind":"cniCacheV1","containerId":")" << kSandbox
                      << R"(","networkName":"podnet","ifName":"eth0","result":{"ips":[{"address":"300.1.1.1/24"}]}})";
  EXPECT_THAT(network_->CachedAttachmentOf(kSandbox).status().message(), HasSubstr("invalid address"));

  // A usable record beside the broken one is taken.
  const std::string good = Write("zz-net", "eth0", kResult100);
  auto cached = network_->CachedAttachmentOf(kSandbox);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(cached->file, good);
}

TEST_F(CachedAttachmentTest, FindsWhatSetUpCached) {
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  auto cached = network_->CachedAttachmentOf(kSandbox);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(cached->file, CacheFile());
  EXPECT_EQ(cached->network.ip, "10.88.0.5");
  EXPECT_THAT(cached->network.additional_ips, ElementsAre("fd00::5"));
}

TEST_F(CniNetworkTest, CheckUsesTheCachedResult) {
  WriteConf("10-podnet.conflist", kChain);
  EXPECT_EQ(network_->Check(ctx_, req_, "podnet").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  state_->calls.clear();
  ASSERT_TRUE(network_->Check(ctx_, req_, "podnet").ok());
  ASSERT_THAT(state_->names(), ElementsAre("CHECK bridge", "CHECK portmap", "CHECK bandwidth"));
  EXPECT_EQ(state_->calls[0].config["prevResult"]["interfaces"].back()["name"], "from-bandwidth");

  state_->errors["CHECK portmap"] = absl::InternalError("CNI plugin portmap failed (CHECK): chain missing");
  EXPECT_THAT(network_->Check(ctx_, req_, "podnet").message(), HasSubstr("chain missing"));
}

TEST_F(CniNetworkTest, PodCidrGoesOnlyToIpRangesPlugins) {
  WriteConf("10-podnet.conflist", R"({"cniVersion":"1.0.0","name":"podnet","plugins":[
    {"type":"bridge","ipam":{"type":"host-local"},"capabilities":{"ipRanges":true}},{"type":"portmap"}]})");
  network_->SetPodCidr("10.244.3.0/24");
  ASSERT_TRUE(network_->SetUp(ctx_, req_).ok());
  EXPECT_EQ(state_->calls[0].config["runtimeConfig"], json::parse(R"({"ipRanges":[[{"subnet":"10.244.3.0/24"}]]})"));
  EXPECT_FALSE(state_->calls[1].config.contains("runtimeConfig"));
}

TEST_F(CniNetworkTest, ReadyFollowsTheConfDir) {
  absl::Status none = network_->Ready();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.message(), "no CNI network config found in " + conf_dir());
  EXPECT_EQ(network_->SetUp(ctx_, req_).status().code(), absl::StatusCode::kFailedPrecondition);

  WriteConf("10-podnet.conflist", "{");
  EXPECT_THAT(network_->Ready().message(), HasSubstr("10-podnet.conflist: invalid JSON"));
  WriteConf("10-podnet.conflist", kChain);
  // Rewritten in place within the same mtime tick is still noticed: the size differs.
  EXPECT_TRUE(network_->Ready().ok());
  std::filesystem::remove(conf_dir() + "/10-podnet.conflist");
  EXPECT_EQ(network_->Ready().code(), absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(conf_dir());
  EXPECT_EQ(network_->Ready().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(CniNetworkTest, ReadyDoesNotReparseUnchangedFiles) {
  const std::string path = conf_dir() + "/10-podnet.conflist";
  WriteConf("10-podnet.conflist", kChain);
  ASSERT_TRUE(network_->Ready().ok());
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);

  // Same inode, size and mtime but unparsable: only a re-parse would notice.
  std::string broken = kChain;
  broken.back() = '!';
  { std::ofstream(path, std::ios::in | std::ios::out) << broken; }
  timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(network_->Ready().ok());

  // A new mtime is a change.
  times[1].tv_sec += 1;
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  EXPECT_THAT(network_->Ready().message(), HasSubstr("invalid JSON"));
}

TEST_F(CniNetworkTest, RescanIsThrottled) {
  Recreate(absl::Hours(1));
  EXPECT_FALSE(network_->Ready().ok());
  WriteConf("10-podnet.conflist", kChain);
  EXPECT_FALSE(network_->Ready().ok()) << "the conf dir is looked at again only after the interval";
  Recreate(absl::Hours(1));
  EXPECT_TRUE(network_->Ready().ok());
}

// --- ProcessPluginExecutor with shell-script plugins --------------------------

class ProcessExecutorTest : public ::testing::Test {
 protected:
  void Plugin(const std::string& name, const std::string& script, int mode = 0755) {
    const std::string path = dir_.path() + "/bin/" + name;
    std::filesystem::create_directories(dir_.path() + "/bin");
    std::ofstream(path) << "#!/bin/sh\n" << script;
    ::chmod(path.c_str(), mode);
  }
  std::string Bin() const { return dir_.path() + "/bin"; }

  TempDir dir_;
  PluginRequest req_{"ADD", "cid1", "/var/run/netns/x", "eth0", "IgnoreUnknown=1;K8S_POD_NAME=web"};
};

TEST_F(ProcessExecutorTest, PassesTheCniProtocol) {
  const std::string out = dir_.path() + "/seen";
  Plugin("echoer", "cat > " + out + ".stdin\nenv | grep ^CNI_ | sort > " + out + ".env\n" +
                       "echo '{\"cniVersion\":\"1.0.0\",\"ips\":[]}'\n");
  ::setenv("CNI_STALE", "from-the-daemon", 1);
  ProcessPluginExecutor exec({dir_.path() + "/empty", Bin()});
  auto result = exec.Exec(common::Context::WithTimeout(absl::Seconds(10)), "echoer", req_, R"({"name":"n"})");
  ::unsetenv("CNI_STALE");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "{\"cniVersion\":\"1.0.0\",\"ips\":[]}\n");
  EXPECT_EQ(ReadFile(out + ".stdin"), R"({"name":"n"})");
  EXPECT_EQ(ReadFile(out + ".env"),
            "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=web\nCNI_COMMAND=ADD\nCNI_CONTAINERID=cid1\n"
            "CNI_IFNAME=eth0\nCNI_NETNS=/var/run/netns/x\nCNI_PATH=" +
                dir_.path() + "/empty:" + Bin() + "\n");
}

TEST_F(ProcessExecutorTest, FindsPluginsInBinDirOrder) {
  std::filesystem::create_directories(dir_.path() + "/first");
  Plugin("which", "echo second\n");
  std::filesystem::copy_file(Bin() + "/which", dir_.path() + "/first/which");
  std::ofstream(dir_.path() + "/first/which", std::ios::app) << "echo never\n";
  ::chmod((dir_.path() + "/first/which").c_str(), 0644);  // not executable: skipped
  ProcessPluginExecutor exec({dir_.path() + "/first", Bin()});
  EXPECT_EQ(*exec.FindPlugin("which"), Bin() + "/which");

  auto missing = exec.FindPlugin("portmap");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(missing.status().message(), "CNI plugin portmap not found in " + dir_.path() + "/first:" + Bin());
  ::chmod((Bin() + "/which").c_str(), 0644);
  EXPECT_THAT(exec.FindPlugin("which").status().message(), HasSubstr("/which is not executable"));
  EXPECT_THAT(ProcessPluginExecutor({}).FindPlugin("bridge").status().message(),
              HasSubstr("no CNI bin dir is configured"));
}

TEST_F(ProcessExecutorTest, ErrorJsonBecomesTheMessage) {
  Plugin("failing",
         "cat >/dev/null\necho '{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"no addresses\","
         "\"details\":\"range 10.99.0.0/30 is full\"}'\necho 'log noise' >&2\nexit 1\n");
  Plugin("crashing", "echo 'panic: runtime error' >&2\nkill -SEGV $$\n");
  ProcessPluginExecutor exec({Bin()});
  auto ctx = common::Context::WithTimeout(absl::Seconds(10));
  auto failed = exec.Exec(ctx, "failing", req_, "{}");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(failed.status().message(), "CNI plugin failing failed (ADD): no addresses: range 10.99.0.0/30 is full");
  auto crashed = exec.Exec(ctx, "crashing", req_, "{}");
  EXPECT_EQ(crashed.status().message(), "CNI plugin crashing failed (ADD): killed by signal 11: panic: runtime error");
}

TEST_F(ProcessExecutorTest, DeadlineKillsThePluginAndItsChildren) {
  const std::string pidfile = dir_.path() + "/child.pid";
  Plugin("hanging", "sleep 60 &\necho $! > " + pidfile + "\nwait\n");
  ProcessPluginExecutor exec({Bin()});
  const absl::Time start = absl::Now();
  // Long enough for the shell to start its child and write the pid file on a loaded machine.
  auto result = exec.Exec(common::Context::WithTimeout(absl::Seconds(2)), "hanging", req_, "{}");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(result.status().message(), "CNI plugin hanging (ADD) did not finish before the deadline and was killed");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));

  int child = std::stoi(ReadFile(pidfile));
  // SIGKILL went to the plugin's process group; the orphan is gone or a zombie.
  for (int i = 0; i < 100 && ::kill(child, 0) == 0; ++i) {
    std::string stat = ReadFile("/proc/" + std::to_string(child) + "/stat");
    if (stat.empty() || stat.find(") Z") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::string stat = ReadFile("/proc/" + std::to_string(child) + "/stat");
  EXPECT_TRUE(stat.empty() || stat.find(") Z") != std::string::npos) << stat;

  auto expired = exec.Exec(common::Context{absl::Now() - absl::Seconds(1), nullptr}, "hanging", req_, "{}");
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kDeadlineExceeded);
  bool cancel = true;
  auto cancelled = exec.Exec(common::Context{absl::InfiniteFuture(), [&] { return cancel; }}, "hanging", req_, "{}");
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled);
}

TEST_F(ProcessExecutorTest, SurvivesPluginsThatIgnoreStdinOrLeaveChildren) {
  // Exits without reading 1 MiB of config: no SIGPIPE for the daemon.
  Plugin("deaf", "echo '{}'\n");
  // Leaves a child holding stdout open: the result still comes back at once.
  Plugin("forking", "cat >/dev/null\nsleep 30 &\necho '{\"ok\":true}'\n");
  // More output than a pipe holds.
  Plugin("chatty", "cat >/dev/null\nhead -c 300000 /dev/zero | tr '\\0' a\n");
  ProcessPluginExecutor exec({Bin()});
  auto ctx = common::Context::WithTimeout(absl::Seconds(20));
  auto deaf = exec.Exec(ctx, "deaf", req_, std::string(1 << 20, ' '));
  ASSERT_TRUE(deaf.ok()) << deaf.status();
  EXPECT_EQ(*deaf, "{}\n");
  const absl::Time start = absl::Now();
  auto forking = exec.Exec(ctx, "forking", req_, "{}");
  ASSERT_TRUE(forking.ok()) << forking.status();
  EXPECT_EQ(*forking, "{\"ok\":true}\n");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  auto chatty = exec.Exec(ctx, "chatty", req_, "{}");
  ASSERT_TRUE(chatty.ok()) << chatty.status();
  EXPECT_EQ(chatty->size(), 300000u);
}

}  // namespace
}  // namespace network
