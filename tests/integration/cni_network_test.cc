// CniNetwork with the real containernetworking-plugins (bridge, host-local, portmap,
// bandwidth, loopback). Everything happens in network namespaces made here: the test
// thread enters a throwaway "node" namespace, so the bridge, the host ends of the
// veths and portmap's iptables rules never touch the real host, and pods get their
// own namespaces. Addresses are private (10.99.0.0/24) and no traffic is sent.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "shim/network/cni_network.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

namespace network {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using testenv::Sh;
using testenv::ShOk;

class CniRealPlugins : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(testenv::CniBinDir() + "/bridge"))
        << "containernetworking-plugins must be installed in " << testenv::CniBinDir();
    std::mt19937_64 rng{std::random_device{}()};
    suffix_ = absl::StrCat(absl::Hex(rng() & 0xffffff, absl::kZeroPad6));
    node_ns_ = "dstest-node-" + suffix_;
    pod_ns_ = "dstest-pod-" + suffix_;
    network_name_ = "dstest-" + suffix_;
    ASSERT_TRUE(ShOk("ip netns add " + node_ns_));
    ASSERT_TRUE(ShOk("ip netns add " + pod_ns_));
    host_ns_fd_ = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(host_ns_fd_, 0);
    int node_fd = ::open(NetnsPath(node_ns_).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(node_fd, 0);
    ASSERT_EQ(::setns(node_fd, CLONE_NEWNET), 0);
    ::close(node_fd);
    entered_node_ = true;

    std::string tmpl = ::testing::TempDir() + "cni_real_test.XXXXXX";
    dir_ = ::mkdtemp(tmpl.data());
    std::filesystem::create_directories(dir_ + "/net.d");
    req_.pod_name = "web";
    req_.pod_namespace = "default";
    req_.pod_uid = "uid-" + suffix_;
    req_.sandbox_id = "dstest" + suffix_ + std::string(52, '0');
    req_.netns_path = NetnsPath(pod_ns_);
  }

  void TearDown() override {
    if (entered_node_) {
      EXPECT_EQ(::setns(host_ns_fd_, CLONE_NEWNET), 0);
    }
    if (host_ns_fd_ >= 0) ::close(host_ns_fd_);
    // Deleting the node namespace also removes the bridge, veths and iptables rules.
    for (const std::string& ns : extra_ns_) Sh("ip netns del " + ns);
    Sh("ip netns del " + pod_ns_);
    Sh("ip netns del " + node_ns_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  static std::string NetnsPath(const std::string& ns) { return "/var/run/netns/" + ns; }

  // bridge + host-local, then the given plugins.
  void WriteConfList(const std::string& more_plugins) {
    std::ofstream(dir_ + "/net.d/10-dstest.conflist")
        << absl::StrCat(R"({"cniVersion": "1.0.0", "name": ")", network_name_, R"(", "plugins": [
             {"type": "bridge", "bridge": "dst)",
                        suffix_, R"(", "isGateway": true, "ipMasq": false,
              "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.0.0/24"}]], "dataDir": ")",
                        dir_, R"(/ipam"}})", more_plugins, "]}");
  }

  std::unique_ptr<CniNetwork> MakeNetwork() {
    CniOptions options;
    options.bin_dirs = {dir_ + "/no-plugins-here", testenv::CniBinDir()};
    options.conf_dir = dir_ + "/net.d";
    options.cache_dir = dir_ + "/cache";
    return std::make_unique<CniNetwork>(options);
  }

  std::string ReservationDir() const { return dir_ + "/ipam/" + network_name_; }
  std::vector<std::string> Reservations() const {
    std::vector<std::string> ips;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(ReservationDir(), ec)) {
      std::string name = e.path().filename().string();
      if (name.starts_with("10.99.0.")) ips.push_back(name);
    }
    return ips;
  }
  std::string NatRules() const { return Sh("iptables -w -t nat -S"); }  // in the node namespace

  std::string suffix_, node_ns_, pod_ns_, network_name_, dir_;
  std::vector<std::string> extra_ns_;
  int host_ns_fd_ = -1;
  bool entered_node_ = false;
  PodNetworkRequest req_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(60));
};

TEST_F(CniRealPlugins, SetUpAndTearDown) {
  WriteConfList(R"(, {"type": "portmap", "capabilities": {"portMappings": true}}, {"type": "loopback"})");
  auto network = MakeNetwork();
  ASSERT_TRUE(network->Ready().ok()) << network->Ready();
  req_.port_mappings = {{"tcp", 80, 18080, ""}};

  auto status = network->SetUp(ctx_, req_);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_THAT(status->ip, StartsWith("10.99.0."));
  EXPECT_TRUE(status->additional_ips.empty());
  EXPECT_EQ(status->network_name, network_name_);

  EXPECT_THAT(Sh("ip -n " + pod_ns_ + " -4 addr show dev eth0"), HasSubstr("inet " + status->ip + "/24"));
  EXPECT_THAT(Sh("ip -n " + pod_ns_ + " link show lo"), HasSubstr(",UP"));
  EXPECT_THAT(Sh("ip link show dst" + suffix_), HasSubstr("UP")) << "the bridge is in the node namespace";
  EXPECT_THAT(Reservations(), ::testing::ElementsAre(status->ip));
  std::ifstream reservation(ReservationDir() + "/" + status->ip);
  std::string owner;
  reservation >> owner;
  EXPECT_EQ(owner, req_.sandbox_id);
  EXPECT_THAT(NatRules(), HasSubstr("--dport 18080 -j DNAT --to-destination " + status->ip + ":80"));
  EXPECT_TRUE(std::filesystem::exists(network->CacheFile(network_name_, req_.sandbox_id)));

  ASSERT_TRUE(network->TearDown(ctx_, req_, network_name_).ok());
  EXPECT_TRUE(Reservations().empty());
  EXPECT_FALSE(ShOk("ip -n " + pod_ns_ + " link show eth0"));
  EXPECT_THAT(NatRules(), Not(HasSubstr("18080")));
  EXPECT_FALSE(std::filesystem::exists(network->CacheFile(network_name_, req_.sandbox_id)));

  absl::Status again = network->TearDown(ctx_, req_, network_name_);
  EXPECT_TRUE(again.ok()) << again;
}

TEST_F(CniRealPlugins, TearDownReleasesTheAddressWhenTheNamespaceIsGone) {
  WriteConfList(R"(, {"type": "portmap", "capabilities": {"portMappings": true}})");
  auto network = MakeNetwork();
  req_.port_mappings = {{"udp", 53, 15353, ""}};
  auto status = network->SetUp(ctx_, req_);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_EQ(Reservations().size(), 1u);

  ASSERT_TRUE(ShOk("ip netns del " + pod_ns_));
  ASSERT_FALSE(std::filesystem::exists(req_.netns_path));
  absl::Status s = network->TearDown(ctx_, req_, network_name_);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(Reservations().empty());
  EXPECT_THAT(NatRules(), Not(HasSubstr("15353")));

  // Once the infra container is gone the caller passes no netns at all.
  req_.netns_path.clear();
  s = network->TearDown(ctx_, req_, network_name_);
  EXPECT_TRUE(s.ok()) << s;
}

TEST_F(CniRealPlugins, FailedSetUpLeavesNothingAllocated) {
  WriteConfList(R"(, {"type": "dstest-no-such-plugin"})");
  auto network = MakeNetwork();
  ASSERT_TRUE(network->Ready().ok()) << "the config is valid; its plugin is missing";
  auto status = network->SetUp(ctx_, req_);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.status().message(),
            absl::StrCat("CNI network ", network_name_, ": CNI plugin dstest-no-such-plugin not found in ", dir_,
                         "/no-plugins-here:", testenv::CniBinDir()));
  EXPECT_TRUE(Reservations().empty()) << "the bridge's address was released by the rollback";
  EXPECT_TRUE(std::filesystem::exists(ReservationDir())) << "the bridge plugin did allocate before the failure";
  EXPECT_FALSE(ShOk("ip -n " + pod_ns_ + " link show eth0"));
  EXPECT_FALSE(std::filesystem::exists(network->CacheFile(network_name_, req_.sandbox_id)));
}

TEST_F(CniRealPlugins, PluginErrorsAreReported) {
  // host-local refuses a range it cannot parse; the bridge passes its error on.
  std::ofstream(dir_ + "/net.d/10-dstest.conflist")
      << absl::StrCat(R"({"cniVersion": "1.0.0", "name": ")", network_name_, R"(", "plugins": [
           {"type": "bridge", "bridge": "dst)",
                      suffix_, R"(",
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.0.0/99"}]], "dataDir": ")",
                      dir_, R"(/ipam"}}]})");
  auto status = MakeNetwork()->SetUp(ctx_, req_);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.status().message()),
              StartsWith("CNI network " + network_name_ + ": CNI plugin bridge failed (ADD): "));
  EXPECT_THAT(status.status().message(), HasSubstr("10.99.0.0/99"));
  EXPECT_FALSE(ShOk("ip -n " + pod_ns_ + " link show eth0"));
}

TEST_F(CniRealPlugins, PodsGetDistinctAddresses) {
  WriteConfList("");
  auto network = MakeNetwork();
  PodNetworkRequest second = req_;
  second.sandbox_id = "dstest" + suffix_ + std::string(52, '1');
  second.netns_path = NetnsPath(pod_ns_ + "-b");
  extra_ns_.push_back(pod_ns_ + "-b");
  ASSERT_TRUE(ShOk("ip netns add " + pod_ns_ + "-b"));

  auto a = network->SetUp(ctx_, req_);
  auto b = network->SetUp(ctx_, second);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->ip, b->ip);
  EXPECT_EQ(Reservations().size(), 2u);
  ASSERT_TRUE(network->TearDown(ctx_, req_, network_name_).ok());
  EXPECT_THAT(Reservations(), ::testing::ElementsAre(b->ip));
  ASSERT_TRUE(network->TearDown(ctx_, second, network_name_).ok());
  EXPECT_TRUE(Reservations().empty());
}

TEST_F(CniRealPlugins, BandwidthLimitsReachTheBandwidthPlugin) {
  // Egress shaping needs the ifb device; skip where the kernel has no ifb.
  if (!ShOk("ip link add dsifb" + suffix_ + " type ifb") || !ShOk("ip link del dsifb" + suffix_))
    GTEST_SKIP() << "no ifb support in this kernel";
  WriteConfList(R"(, {"type": "bandwidth", "capabilities": {"bandwidth": true}})");
  auto network = MakeNetwork();
  req_.bandwidth = Bandwidth{1000000, 2000000};
  auto status = network->SetUp(ctx_, req_);
  ASSERT_TRUE(status.ok()) << status.status();
  std::string qdiscs = Sh("tc qdisc show");
  EXPECT_THAT(qdiscs, HasSubstr("tbf 1: dev veth"));
  EXPECT_THAT(qdiscs, HasSubstr("rate 1Mbit"));
  EXPECT_THAT(qdiscs, HasSubstr("rate 2Mbit"));
  ASSERT_TRUE(network->TearDown(ctx_, req_, network_name_).ok());
  EXPECT_THAT(Sh("ip link show type ifb"), Not(HasSubstr("bwp"))) << "the ifb device is removed";
  EXPECT_TRUE(Reservations().empty());
}

}  // namespace
}  // namespace network
