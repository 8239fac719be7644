// network::NetlinkAddressReader in real network namespaces (ip netns), as it reads a
// pod's addresses when the CNI cache has none: what `ip addr show dev <if> scope global`
// prints, IPv4 first, nothing of link or host scope. Needs root and iproute2.
#include "shim/network/netns_addresses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/integration/shell.h"

namespace network {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testenv::ShOk;

class NetnsAddresses : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng{std::random_device{}()};
    ns_ = absl::StrCat("dstest-addr-", rng() % 1000000);
    ASSERT_TRUE(ShOk("ip netns add " + ns_));
    ASSERT_TRUE(ShOk("ip -n " + ns_ + " link set lo up"));
  }
  void TearDown() override { testenv::Sh("ip netns del " + ns_); }
  std::string Path() const { return "/var/run/netns/" + ns_; }
  bool Ip(const std::string& args) { return ShOk("ip -n " + ns_ + " " + args); }

  std::string ns_;
  NetlinkAddressReader reader_;
};

TEST_F(NetnsAddresses, GlobalAddressesOfTheInterfaceIpv4First) {
  // A veth pair, both ends in the namespace (no dummy module needed).
  ASSERT_TRUE(Ip("link add eth0 type veth peer name dsaddr1"));
  ASSERT_TRUE(Ip("link set eth0 up"));
  ASSERT_TRUE(Ip("addr add fd00:77::5/64 dev eth0 nodad"));
  ASSERT_TRUE(Ip("addr add 10.99.77.5/24 dev eth0"));
  ASSERT_TRUE(Ip("addr add 10.99.78.5/24 dev eth0 scope link"));  // not global
  ASSERT_TRUE(Ip("addr add fe80::77/64 dev eth0 nodad"));          // link-local
  ASSERT_TRUE(Ip("addr add 10.99.79.5/24 dev dsaddr1"));  // another interface

  auto addresses = reader_.GlobalAddresses(Path(), "eth0");
  ASSERT_TRUE(addresses.ok()) << addresses.status();
  EXPECT_THAT(*addresses, ElementsAre("10.99.77.5", "fd00:77::5"));
  auto other = reader_.GlobalAddresses(Path(), "dsaddr1");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_THAT(*other, ElementsAre("10.99.79.5"));
  // The thread went back home, where the pod's interface does not exist.
  EXPECT_EQ(reader_.GlobalAddresses("", "dsaddr1").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(NetnsAddresses, AnInterfaceWithoutAddressHasNone) {
  ASSERT_TRUE(Ip("link add eth0 type veth peer name dsaddr1"));
  auto addresses = reader_.GlobalAddresses(Path(), "eth0");
  ASSERT_TRUE(addresses.ok()) << addresses.status();
  EXPECT_THAT(*addresses, IsEmpty());
}

TEST_F(NetnsAddresses, AMissingInterfaceIsNotFound) {
  auto addresses = reader_.GlobalAddresses(Path(), "eth0");
  EXPECT_EQ(addresses.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(addresses.status().message(), HasSubstr("network namespace " + Path() + ": no interface eth0"));
}

}  // namespace
}  // namespace network
