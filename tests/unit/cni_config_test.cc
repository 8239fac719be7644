#include "shim/network/cni_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace network {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "cni_config_test.XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  void Write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ + "/" + name) << content;
  }

 private:
  std::string path_;
};

const char kGoodList[] = R"({"cniVersion":"1.0.0","name":"good","plugins":[{"type":"bridge"},{"type":"portmap"}]})";

// --- loading -----------------------------------------------------------------

struct RejectCase {
  std::string text;
  bool single_plugin;
  std::string reason;
};

class ParseNetworkConfigRejects : public ::testing::TestWithParam<RejectCase> {};

TEST_P(ParseNetworkConfigRejects, WithReason) {
  auto config = ParseNetworkConfig(GetParam().text, GetParam().single_plugin);
  ASSERT_FALSE(config.ok()) << GetParam().text;
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr(GetParam().reason));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseNetworkConfigRejects,
    ::testing::Values(
        RejectCase{"{\"name\": \"x\",\n \"plugins\": [}", false, "invalid JSON: parse error at line 2"},
        RejectCase{"", false, "invalid JSON"}, RejectCase{"[]", false, "not a JSON object"},
        RejectCase{R"({"cniVersion":"1.0.0","plugins":[{"type":"bridge"}]})", false, "missing \"name\""},
        RejectCase{R"({"name":"","plugins":[{"type":"bridge"}]})", false, "missing \"name\""},
        RejectCase{R"({"name":"../etc","plugins":[{"type":"bridge"}]})", false, "network name \"../etc\""},
        RejectCase{R"({"name":"x","cniVersion":1,"plugins":[{"type":"bridge"}]})", false, "cniVersion"},
        RejectCase{R"({"name":"x"})", false, "missing \"plugins\""},
        RejectCase{R"({"name":"x","plugins":[]})", false, "not a non-empty list"},
        RejectCase{R"({"name":"x","plugins":{"type":"bridge"}})", false, "not a non-empty list"},
        RejectCase{R"({"name":"x","plugins":[{"type":"bridge"},{"mtu":1}]})", false, "plugins[1]: missing \"type\""},
        RejectCase{R"({"name":"x","plugins":[{"type":"../../bin/sh"}]})", false, "not a plain file name"},
        RejectCase{R"({"name":"x","plugins":[7]})", false, "plugins[0]: not an object"},
        RejectCase{R"({"name":"x","cniVersion":"0.3.1"})", true, "missing \"type\""},
        RejectCase{R"({"type":"bridge"})", true, "missing \"name\""}));

TEST(ParseNetworkConfig, WrapsSinglePluginConf) {
  const char kConf[] = R"({"cniVersion":"0.3.1","name":"single","type":"bridge","bridge":"cni0"})";
  auto config = ParseNetworkConfig(kConf, true);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name, "single");
  EXPECT_EQ(config->cni_version, "0.3.1");
  ASSERT_EQ(config->plugins().size(), 1u);
  EXPECT_EQ(config->PluginType(0), "bridge");
  EXPECT_EQ(config->plugins()[0], json::parse(kConf));
  EXPECT_EQ(config->list["name"], "single");
  EXPECT_EQ(config->list["cniVersion"], "0.3.1");

  auto unversioned = ParseNetworkConfig(R"({"name":"single","type":"ptp"})", true);
  ASSERT_TRUE(unversioned.ok()) << unversioned.status();
  EXPECT_EQ(unversioned->list, json::parse(R"({"name":"single","plugins":[{"name":"single","type":"ptp"}]})"));
}

TEST(ParseNetworkConfig, ReadsListFields) {
  auto config = ParseNetworkConfig(
      R"({"cniVersion":"0.4.0","name":"k8s-pod-network","disableCheck":true,"plugins":[{"type":"calico"},{"type":"bandwidth"}]})",
      false);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name, "k8s-pod-network");
  EXPECT_EQ(config->cni_version, "0.4.0");
  EXPECT_TRUE(config->disable_check);
  EXPECT_EQ(config->PluginType(1), "bandwidth");

  auto no_version = ParseNetworkConfig(R"({"name":"n","disableCheck":"true","plugins":[{"type":"ptp"}]})", false);
  ASSERT_TRUE(no_version.ok()) << no_version.status();
  EXPECT_EQ(no_version->cni_version, "");
  EXPECT_TRUE(no_version->disable_check);
}

TEST(LoadDefaultNetworkConfig, FirstValidFileByNameWins) {
  TempDir dir;
  dir.Write("05-notes.txt", "not a config");
  dir.Write("10-broken.conflist", "{");
  dir.Write("20-noname.conflist", R"({"plugins":[{"type":"bridge"}]})");
  dir.Write("30-noplugins.conflist", R"({"name":"x"})");
  dir.Write("40-notype.conf", R"({"name":"x","cniVersion":"0.3.1"})");
  dir.Write("50-good.conflist", kGoodList);
  dir.Write("60-later.conf", R"({"name":"later","type":"bridge"})");
  std::filesystem::create_directory(dir.path() + "/00-dir.conflist");

  auto config = LoadDefaultNetworkConfig(dir.path());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name, "good");
  EXPECT_EQ(config->file, dir.path() + "/50-good.conflist");
  EXPECT_EQ(config->plugins().size(), 2u);
}

TEST(LoadDefaultNetworkConfig, ConfAndJsonFilesAreSinglePlugins) {
  TempDir dir;
  dir.Write("10-single.json", R"({"cniVersion":"0.3.1","name":"fromjson","type":"ptp"})");
  dir.Write("20-list.conflist", kGoodList);
  auto config = LoadDefaultNetworkConfig(dir.path());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name, "fromjson");
  EXPECT_EQ(config->PluginType(0), "ptp");
}

TEST(LoadDefaultNetworkConfig, ListsWhyEachFileWasRejected) {
  TempDir dir;
  dir.Write("10-x.conflist", "{\"name\": ");
  dir.Write("20-y.conf", R"({"name":"y"})");
  auto config = LoadDefaultNetworkConfig(dir.path());
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(config.status().message(), HasSubstr("no valid CNI network config in " + dir.path() + ": "));
  EXPECT_THAT(config.status().message(), HasSubstr("10-x.conflist: invalid JSON: parse error at line 1"));
  EXPECT_THAT(config.status().message(), HasSubstr("; 20-y.conf: missing \"type\""));
}

TEST(LoadDefaultNetworkConfig, NotFoundWhenEmptyOrMissing) {
  TempDir dir;
  dir.Write("README", "nothing here");
  auto empty = LoadDefaultNetworkConfig(dir.path());
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(empty.status().message(), "no CNI network config found in " + dir.path());
  auto missing = LoadDefaultNetworkConfig(dir.path() + "/nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

// --- versions and arguments --------------------------------------------------

TEST(CniVersionAtLeast, ComparesNumerically) {
  EXPECT_TRUE(CniVersionAtLeast("0.4.0", "0.4.0"));
  EXPECT_TRUE(CniVersionAtLeast("1.0.0", "0.4.0"));
  EXPECT_TRUE(CniVersionAtLeast("0.10.0", "0.4.0"));
  EXPECT_FALSE(CniVersionAtLeast("0.3.1", "0.4.0"));
  EXPECT_FALSE(CniVersionAtLeast("", "0.4.0"));
  EXPECT_FALSE(CniVersionAtLeast("garbage", "0.2.0"));
  EXPECT_TRUE(CniVersionAtLeast("", "0.1.0"));
}

TEST(CniArgs, KubeletKeys) {
  PodNetworkRequest req;
  req.pod_name = "web-0";
  req.pod_namespace = "default";
  req.pod_uid = "1234-5678";
  req.sandbox_id = "abc123";
  EXPECT_EQ(JoinCniArgs(CniArgs(req)),
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc123;"
            "K8S_POD_UID=1234-5678");
}

TEST(CapabilityArgs, PortMappingsAlwaysOthersOnlyWhenSet) {
  PodNetworkRequest req;
  EXPECT_EQ(CapabilityArgs(req, ""), json::parse(R"({"portMappings":[]})"));

  req.port_mappings = {{"TCP", 80, 8080, ""}, {"udp", 53, 5353, "127.0.0.1"}, {"tcp", 9000, 0, ""}};
  req.bandwidth = Bandwidth{1000000, 0};
  EXPECT_EQ(CapabilityArgs(req, "10.244.1.0/24"), json::parse(R"({
    "portMappings": [{"hostPort":8080,"containerPort":80,"protocol":"tcp"},
                     {"hostPort":5353,"containerPort":53,"protocol":"udp","hostIP":"127.0.0.1"}],
    "bandwidth": {"ingressRate":1000000,"ingressBurst":2147483647},
    "ipRanges": [[{"subnet":"10.244.1.0/24"}]]})"));
}

TEST(CapabilityArgs, DualStackRangesAndEgress) {
  PodNetworkRequest req;
  req.bandwidth = Bandwidth{0, 5000};
  json args = CapabilityArgs(req, "10.244.1.0/24, fd00:1::/64");
  EXPECT_EQ(args["bandwidth"], json::parse(R"({"egressRate":5000,"egressBurst":2147483647})"));
  EXPECT_EQ(args["ipRanges"], json::parse(R"([[{"subnet":"10.244.1.0/24"}],[{"subnet":"fd00:1::/64"}]])"));

  req.bandwidth = Bandwidth{};
  EXPECT_FALSE(CapabilityArgs(req, "").contains("bandwidth"));
}

// --- plugin stdin ------------------------------------------------------------

CniNetworkConfig ChainConfig(const std::string& version) {
  auto config = ParseNetworkConfig(json{{"cniVersion", version}, {"name", "chain"}, {"plugins", json::parse(R"([
    {"type":"bridge","name":"ignored","cniVersion":"0.1.0","ipam":{"type":"host-local"}},
    {"type":"portmap","capabilities":{"portMappings":true,"bandwidth":false}},
    {"type":"host-local-ranges","capabilities":{"ipRanges":true}},
    {"type":"stale","runtimeConfig":{"old":1},"prevResult":{"old":1}}])")}}
                                       .dump(),
                                   false);
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

TEST(BuildPluginConfig, InjectsNameAndVersion) {
  CniNetworkConfig config = ChainConfig("1.0.0");
  json conf = BuildPluginConfig(config, 0, json(), CapabilityArgs({}, ""));
  EXPECT_EQ(conf, json::parse(R"({"type":"bridge","name":"chain","cniVersion":"1.0.0","ipam":{"type":"host-local"}})"));
}

TEST(BuildPluginConfig, RuntimeConfigOnlyForDeclaredCapabilities) {
  CniNetworkConfig config = ChainConfig("1.0.0");
  PodNetworkRequest req;
  req.port_mappings = {{"tcp", 80, 8080, ""}};
  req.bandwidth = Bandwidth{1000, 1000};
  json args = CapabilityArgs(req, "");

  EXPECT_FALSE(BuildPluginConfig(config, 0, json(), args).contains("runtimeConfig"));
  // portmap declares bandwidth=false: only portMappings.
  EXPECT_EQ(BuildPluginConfig(config, 1, json(), args)["runtimeConfig"],
            json::parse(R"({"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]})"));
  // ipRanges declared, but the pod CIDR is not known yet.
  EXPECT_FALSE(BuildPluginConfig(config, 2, json(), args).contains("runtimeConfig"));
  EXPECT_EQ(BuildPluginConfig(config, 2, json(), CapabilityArgs(req, "10.1.0.0/16"))["runtimeConfig"],
            json::parse(R"({"ipRanges":[[{"subnet":"10.1.0.0/16"}]]})"));
}

TEST(BuildPluginConfig, ChainsPrevResultAndDropsStaleKeys) {
  CniNetworkConfig config = ChainConfig("0.4.0");
  json prev = json::parse(R"({"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.1.0.5/16"}]})");
  json conf = BuildPluginConfig(config, 1, prev, CapabilityArgs({}, ""));
  EXPECT_EQ(conf["prevResult"], prev);
  EXPECT_EQ(conf["runtimeConfig"], json::parse(R"({"portMappings":[]})"));

  json stale = BuildPluginConfig(config, 3, json(), CapabilityArgs({}, ""));
  EXPECT_FALSE(stale.contains("prevResult"));
  EXPECT_EQ(stale["runtimeConfig"], json::parse(R"({"old":1})")) << "a plugin's own runtimeConfig is kept";
  EXPECT_EQ(BuildPluginConfig(config, 3, prev, CapabilityArgs({}, ""))["prevResult"], prev);
}

// --- results -----------------------------------------------------------------

struct ResultCase {
  std::string name;
  std::string result;
  std::string primary;
  std::vector<std::string> additional;
};

class ParseResultIpsTable : public ::testing::TestWithParam<ResultCase> {};

TEST_P(ParseResultIpsTable, PrimaryIsFirstIpv4) {
  auto ips = ParseResultIps(json::parse(GetParam().result));
  ASSERT_TRUE(ips.ok()) << ips.status();
  EXPECT_EQ(ips->primary, GetParam().primary);
  EXPECT_EQ(ips->additional, GetParam().additional);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseResultIpsTable,
    ::testing::Values(ResultCase{"v1_0_dual_stack_v6_first",
                                 R"({"cniVersion":"1.0.0",
          "interfaces":[{"name":"cni0","mac":"aa"},{"name":"veth1"},{"name":"eth0","sandbox":"/var/run/netns/x"}],
          "ips":[{"address":"fd00::5/64","interface":2},{"address":"10.88.0.5/16","gateway":"10.88.0.1","interface":2}]})",
                                 "10.88.0.5",
                                 {"fd00::5"}},
                      ResultCase{"v0_4_skips_host_side_bridge_address",
                                 R"({"cniVersion":"0.4.0",
          "interfaces":[{"name":"cni0"},{"name":"eth0","sandbox":"/proc/1/ns/net"}],
          "ips":[{"version":"4","address":"10.88.0.1/16","interface":0},
                 {"version":"4","address":"10.88.0.7/16","interface":1},
                 {"version":"4","address":"10.99.0.7/24","interface":1}]})",
                                 "10.88.0.7",
                                 {"10.99.0.7"}},
                      ResultCase{"v0_3_without_interfaces",
                                 R"({"cniVersion":"0.3.1","ips":[{"version":"6","address":"2001:db8::9/64"}]})",
                                 "2001:db8::9",
                                 {}},
                      ResultCase{"v0_3_interface_named_like_ifname",
                                 R"({"cniVersion":"0.3.1",
          "interfaces":[{"name":"eth0"}],"ips":[{"version":"4","address":"192.168.1.2/24","interface":0}]})",
                                 "192.168.1.2",
                                 {}},
                      ResultCase{"v0_2_ip4_ip6",
                                 R"({"cniVersion":"0.2.0","ip4":{"ip":"10.1.2.3/24","gateway":"10.1.2.1"},
          "ip6":{"ip":"fd00::3/64"},"dns":{}})",
                                 "10.1.2.3",
                                 {"fd00::3"}},
                      ResultCase{"v0_2_ip6_only", R"({"cniVersion":"0.2.0","ip6":{"ip":"fd00::3/64"}})", "fd00::3", {}},
                      ResultCase{"no_addresses", R"({"cniVersion":"1.0.0","interfaces":[{"name":"eth0"}]})", "", {}},
                      ResultCase{"address_without_prefix", R"({"ips":[{"address":"10.0.0.9"}]})", "10.0.0.9", {}}),
    [](const auto& info) { return info.param.name; });

TEST(ParseResultIps, RejectsMalformedResults) {
  for (const char* bad :
       {R"([])", R"({"ips":{}})", R"({"ips":[{"gateway":"10.0.0.1"}]})", R"({"ips":[{"address":"not-an-ip/24"}]})",
        R"({"ips":[{"address":5}]})", R"({"ip4":{"gateway":"10.0.0.1"}})"}) {
    auto ips = ParseResultIps(json::parse(bad));
    EXPECT_EQ(ips.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// --- plugin errors -----------------------------------------------------------

TEST(PluginFailure, UsesCniErrorJson) {
  absl::Status s = PluginFailure("bridge", "ADD", "exit status 1",
                                 R"({"cniVersion":"1.0.0","code":7,"msg":"failed to allocate for range 0",)"
                                 R"("details":"no IP addresses available in range set: 10.99.0.1-10.99.0.3"})",
                                 "noise on stderr");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(),
            "CNI plugin bridge failed (ADD): failed to allocate for range 0: "
            "no IP addresses available in range set: 10.99.0.1-10.99.0.3");

  absl::Status no_details = PluginFailure("portmap", "DEL", "exit status 1", R"({"code":999,"msg":"boom"})", "");
  EXPECT_EQ(no_details.message(), "CNI plugin portmap failed (DEL): boom");
}

TEST(PluginFailure, TryAgainLaterIsUnavailable) {
  absl::Status s = PluginFailure("calico", "ADD", "exit status 1", R"({"code":11,"msg":"datastore not ready"})", "");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
}

TEST(PluginFailure, FallsBackToExitStatusAndStderr) {
  absl::Status s = PluginFailure("mine", "ADD", "killed by signal 11", "not json", "\npanic: nil map\ngoroutine 1\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "CNI plugin mine failed (ADD): killed by signal 11: panic: nil map\ngoroutine 1");
  EXPECT_EQ(PluginFailure("x", "DEL", "exit status 2", "", "").message(), "CNI plugin x failed (DEL): exit status 2");
}

}  // namespace
}  // namespace network
