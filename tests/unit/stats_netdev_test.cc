#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <ostream>

#include "shim/stats/netdev.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim::stats {

void PrintTo(const InterfaceCounters& c, std::ostream* os) {
  *os << "{" << c.name << " rx=" << c.rx_bytes << "/" << c.rx_errors << " tx=" << c.tx_bytes << "/" << c.tx_errors
      << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kHeader[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
    "carrier compressed\n";

// /proc/<pid>/net/dev of a busybox container on this machine.
constexpr char kContainerNetDev[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
    "carrier compressed\n"
    "    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0"
    "          0\n"
    "  eth0:     736       8    0    0    0     0          0         0        0       0    0    0    0     0       0"
    "          0\n";

TEST(NetDevParse, ContainerOfThisMachine) {
  auto interfaces = ParseNetDev(kContainerNetDev);
  ASSERT_TRUE(interfaces.ok()) << interfaces.status();
  EXPECT_THAT(*interfaces, ElementsAre(InterfaceCounters{"eth0", 736, 0, 0, 0}));
}

TEST(NetDevParse, SeveralInterfacesLoopbackLeftOut) {
  // This machine's host view (long names are not padded, 12-digit counters), a VLAN and
  // CNI-style names, and a 2.6-era line where the byte count touches the colon.
  std::string text = std::string(kHeader) +
                     "    lo: 135073424798 5138692    0    0    0     0          0         0 135073424798 5138692    0"
                     "    0    0     0       0          0\n"
                     "  eth0: 116515705    2317    3    0    0     0          0         0    90118    1241    4    0"
                     "    0     0       0          0\n"
                     "docker0:     584       7    0    0    0     0          0         0    10492      98    0    8"
                     "    0     0       0          0\n"
                     "veth5837d85:       0       0    0    0    0     0          0         0     1226      15    0"
                     "    0    0     0       0          0\n"
                     "eth0.100:    9000      10    1    0    0     0          0         0     8000      20    2    0"
                     "    0     0       0          0\n"
                     "cali-1a2b.c3:      42       1    0    0    0     0          0         0       24       1    0"
                     "    0    0     0       0          0\n"
                     "  eth1:123456789  101112    5    0    0     0          0         0 18446744073709551615  1314"
                     "    6    0    0     0       0          0\n";
  auto interfaces = ParseNetDev(text);
  ASSERT_TRUE(interfaces.ok()) << interfaces.status();
  EXPECT_THAT(
      *interfaces,
      ElementsAre(InterfaceCounters{"eth0", 116515705, 3, 90118, 4}, InterfaceCounters{"docker0", 584, 0, 10492, 0},
                  InterfaceCounters{"veth5837d85", 0, 0, 1226, 0}, InterfaceCounters{"eth0.100", 9000, 1, 8000, 2},
                  InterfaceCounters{"cali-1a2b.c3", 42, 0, 24, 0},
                  InterfaceCounters{"eth1", 123456789, 5, 18446744073709551615u, 6}));
}

TEST(NetDevParse, OnlyLoopbackOrHeaders) {
  auto lo = ParseNetDev(std::string(kHeader) +
                        "    lo:      10       1    0    0    0     0          0         0       10       1    0    0"
                        "    0     0       0          0\n");
  ASSERT_TRUE(lo.ok()) << lo.status();
  EXPECT_TRUE(lo->empty());
  auto headers = ParseNetDev(kHeader);
  ASSERT_TRUE(headers.ok()) << headers.status();
  EXPECT_TRUE(headers->empty());
}

struct BadCase {
  std::string name;
  std::string text;
  std::string reason;
  friend void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }
};

class NetDevParseRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(NetDevParseRejects, WithReason) {
  auto interfaces = ParseNetDev(GetParam().text);
  ASSERT_FALSE(interfaces.ok()) << GetParam().text;
  EXPECT_EQ(interfaces.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(interfaces.status().message(), HasSubstr(GetParam().reason));
}

const std::string kLine16 = "   1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";

INSTANTIATE_TEST_SUITE_P(
    NetDevTable, NetDevParseRejects,
    ::testing::Values(
        BadCase{"Empty", "", "no header lines"},
        BadCase{"NoHeaders", "  eth0:" + kLine16 + "  eth1:" + kLine16 + "  eth2:" + kLine16, "no header lines"},
        BadCase{"NoColon", std::string(kHeader) + "  eth0" + kLine16, "line 3: no \"<interface>:\""},
        BadCase{"NoName", std::string(kHeader) + "   :" + kLine16, "line 3: no interface name"},
        BadCase{"FifteenCounters", std::string(kHeader) + "  eth0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n",
                "line 3: 15 counters instead of 16"},
        BadCase{"SeventeenCounters", std::string(kHeader) + "  eth0:" + kLine16.substr(0, kLine16.size() - 1) + " 17\n",
                "17 counters"},
        BadCase{"NotANumber",
                std::string(kHeader) + "  eth0:" + kLine16 + "  eth1: 1 2 x 4 5 6 7 8 9 10 11 12 13 14 15 16\n",
                "line 4: counter 3 \"x\" is not a number"},
        BadCase{"Negative", std::string(kHeader) + "  eth0: -1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", "counter 1"},
        BadCase{"Overflow",
                std::string(kHeader) + "  eth0: 18446744073709551616 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n",
                "counter 1"}),
    [](const auto& info) { return info.param.name; });

TEST(NetDevRead, FromTheProcessProcDir) {
  testutil::FakeTree tree;
  tree.Write("proc/321/net/dev", kContainerNetDev);
  auto interfaces = ReadNetDev(321, tree.Path("proc"));
  ASSERT_TRUE(interfaces.ok()) << interfaces.status();
  EXPECT_THAT(*interfaces, ElementsAre(InterfaceCounters{"eth0", 736, 0, 0, 0}));
}

TEST(NetDevRead, GoneProcessIsNotFound) {
  testutil::FakeTree tree;
  EXPECT_EQ(ReadNetDev(321, tree.Path("proc")).status().code(), absl::StatusCode::kNotFound);
}

TEST(NetDevRead, BrokenFileSaysWhich) {
  testutil::FakeTree tree;
  tree.Write("proc/321/net/dev", std::string(kHeader) + "  eth0: 1 2\n");
  auto interfaces = ReadNetDev(321, tree.Path("proc"));
  EXPECT_EQ(interfaces.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(interfaces.status().message(), HasSubstr(tree.Path("proc/321/net/dev") + ": line 3: 2 counters"));
}

TEST(NetDevRead, ThisProcessParses) {
  auto interfaces = ReadNetDev(::getpid());
  ASSERT_TRUE(interfaces.ok()) << interfaces.status();
  for (const InterfaceCounters& c : *interfaces) EXPECT_NE(c.name, "lo");
}

}  // namespace
}  // namespace shim::stats
