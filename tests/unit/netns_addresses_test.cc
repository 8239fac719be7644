// common::NetnsThread and network::NetlinkAddressReader where no privilege is needed:
// the home namespace (no setns) and namespaces that cannot be opened. Entering a pod's
// namespace is tested with real namespaces in tests/integration/netns_addresses_test.cc.
#include "shim/network/netns_addresses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/netns_thread.h"
#include "common/no_wait.h"

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(NetnsThread, RunsWorkOnItsThreadInOrder) {
  common::NetnsThread netns;
  std::vector<int> order;
  std::thread::id ran_on;
  for (int i = 0; i < 3; ++i) netns.Post("", [&order, i](const absl::Status& entered) {
    EXPECT_TRUE(entered.ok());
    order.push_back(i);
  });
  ASSERT_TRUE(netns.Run("", [&] { ran_on = std::this_thread::get_id(); }).ok());
  EXPECT_THAT(order, ElementsAre(0, 1, 2));
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(NetnsThread, AGoneNamespaceIsNotFoundAndTheWorkDoesNotRun) {
  common::NetnsThread netns;
  bool ran = false;
  absl::Status entered = netns.Run("/proc/0/ns/net", [&] { ran = true; });
  EXPECT_EQ(entered.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(entered.message(), HasSubstr("/proc/0/ns/net"));
  EXPECT_FALSE(ran);
  // The thread goes on.
  EXPECT_TRUE(netns.Run("", [&] { ran = true; }).ok());
  EXPECT_TRUE(ran);
}

TEST(NetnsThread, AThreadThatMustNotWaitEntersNoNamespace) {
  common::NetnsThread netns;
  bool ran = false;
  common::NoWaitScope no_wait;
  absl::Status entered = netns.Run("", [&] { ran = true; });
  EXPECT_EQ(entered.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(no_wait.wanted_to_wait());
}

TEST(NetlinkAddressReader, LoopbackHasNoGlobalAddress) {
  network::NetlinkAddressReader reader;
  // 127.0.0.1 and ::1 have host scope: `ip addr show dev lo scope global` prints nothing.
  auto addresses = reader.GlobalAddresses("", "lo");
  ASSERT_TRUE(addresses.ok()) << addresses.status();
  EXPECT_THAT(*addresses, IsEmpty());
}

TEST(NetlinkAddressReader, MissingInterfaceOrNamespaceIsNotFound) {
  network::NetlinkAddressReader reader;
  auto no_interface = reader.GlobalAddresses("", "dstest-none0");
  EXPECT_EQ(no_interface.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(no_interface.status().message(), HasSubstr("no interface dstest-none0"));
  auto no_namespace = reader.GlobalAddresses("/proc/0/ns/net", "eth0");
  EXPECT_EQ(no_namespace.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
