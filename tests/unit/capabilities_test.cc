#include "shim/capabilities.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace shim {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Not;

// This project's test machine: every capability up to 40 but CAP_SYS_RESOURCE (24).
constexpr char kRestrictedStatus[] = "Name:\tcat\nCapInh:\t0000000000000000\nCapBnd:\t000001fffeffffff\nCapAmb:\t0\n";

TEST(HostCapabilities, BoundingSetBitsNameWhatTheHostGrants) {
  auto caps = ParseHostCapabilities(kRestrictedStatus, 40);
  ASSERT_TRUE(caps.has_value());
  EXPECT_THAT(caps->missing, ElementsAre("CAP_SYS_RESOURCE"));
  EXPECT_EQ(caps->grantable.size(), 40u);
  EXPECT_EQ(caps->grantable.front(), "CAP_CHOWN");
  EXPECT_EQ(caps->grantable.back(), "CAP_CHECKPOINT_RESTORE");
  EXPECT_THAT(caps->grantable, Not(Contains("CAP_SYS_RESOURCE")));
}

TEST(HostCapabilities, OnlyCapabilitiesTheKernelKnowsCount) {
  // An older kernel (cap_last_cap 37): bits above it are not capabilities.
  auto caps = ParseHostCapabilities("CapBnd:\t0000003fffffffff\n", 37);
  ASSERT_TRUE(caps.has_value());
  EXPECT_TRUE(caps->missing.empty());
  EXPECT_EQ(caps->grantable.size(), 38u);
  EXPECT_EQ(caps->grantable.back(), "CAP_AUDIT_READ");
}

TEST(HostCapabilities, NoBoundingSetLineOrAGarbledOneIsUnknown) {
  EXPECT_FALSE(ParseHostCapabilities("Name:\tcat\n", 40).has_value());
  EXPECT_FALSE(ParseHostCapabilities("CapBnd:\tzz\n", 40).has_value());
}

TEST(HostCapabilities, ThisHostCanBeRead) {
  auto caps = ReadHostCapabilities();
  ASSERT_TRUE(caps.has_value());
  EXPECT_THAT(caps->grantable, Contains("CAP_CHOWN"));
}

TEST(GrantableCapabilities, AllBecomesWhatTheHostGrantsAndMissingNamesAreLeftOut) {
  auto host = ParseHostCapabilities(kRestrictedStatus, 40);
  ASSERT_TRUE(host.has_value());
  EXPECT_EQ(GrantableCapabilities({"ALL"}, *host), host->grantable);
  EXPECT_EQ(GrantableCapabilities({"CAP_NET_ADMIN", "ALL"}, *host), host->grantable);
  EXPECT_THAT(GrantableCapabilities({"CAP_NET_ADMIN", "CAP_SYS_RESOURCE", "CAP_SYS_TIME"}, *host),
              ElementsAre("CAP_NET_ADMIN", "CAP_SYS_TIME"));
  EXPECT_TRUE(GrantableCapabilities({}, *host).empty());
}

TEST(CapabilityName, DockersSpellingOfAnyCRISpelling) {
  EXPECT_EQ(CapabilityName("net_admin"), "CAP_NET_ADMIN");
  EXPECT_EQ(CapabilityName("CAP_NET_ADMIN"), "CAP_NET_ADMIN");
  EXPECT_EQ(CapabilityName("cap_chown"), "CAP_CHOWN");
  EXPECT_EQ(CapabilityName("all"), "ALL");
  EXPECT_EQ(CapabilityName(""), "CAP_");
}

TEST(AsksBeyond, AllAndWhatTheHostLacks) {
  auto host = ParseHostCapabilities(kRestrictedStatus, 40);
  ASSERT_TRUE(host.has_value());
  EXPECT_TRUE(AsksBeyond("all", *host));
  EXPECT_TRUE(AsksBeyond("sys_resource", *host));
  EXPECT_TRUE(AsksBeyond("CAP_SYS_RESOURCE", *host));
  EXPECT_FALSE(AsksBeyond("NET_ADMIN", *host));
}

TEST(EngineGrantsAllCapabilitiesItself, FromDocker23On) {
  EXPECT_FALSE(EngineGrantsAllCapabilitiesItself("20.10.24+dfsg1"));
  EXPECT_FALSE(EngineGrantsAllCapabilitiesItself("19.03.15"));
  EXPECT_TRUE(EngineGrantsAllCapabilitiesItself("23.0.0"));
  EXPECT_TRUE(EngineGrantsAllCapabilitiesItself("26.1.5+dfsg1"));
  EXPECT_TRUE(EngineGrantsAllCapabilitiesItself("28.5.1"));
  EXPECT_FALSE(EngineGrantsAllCapabilitiesItself(""));
}

}  // namespace
}  // namespace shim
