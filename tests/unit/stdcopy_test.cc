#include "dockerclient/stdcopy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dockerclient {
namespace {

std::string Frame(uint8_t stream, std::string_view payload) {
  std::string out{static_cast<char>(stream), 0, 0, 0};
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((payload.size() >> shift) & 0xff);
  out.append(payload);
  return out;
}

struct Collected {
  std::string out, err, sys;
  StdDemuxer demux{[this](StdStream s, std::string_view d) {
    (s == StdStream::kStdout ? out : s == StdStream::kStderr ? err : sys).append(d);
  }};
};

TEST(StdDemuxerTest, SplitsFramesFedWhole) {
  Collected c;
  EXPECT_TRUE(c.demux.Feed(Frame(1, "out1") + Frame(2, "err") + Frame(1, "out2") + Frame(3, "boom")));
  EXPECT_EQ(c.out, "out1out2");
  EXPECT_EQ(c.err, "err");
  EXPECT_EQ(c.sys, "boom");
  EXPECT_TRUE(c.demux.AtFrameBoundary());
}

TEST(StdDemuxerTest, SplitsFramesFedOneByteAtATime) {
  const std::string stream = Frame(1, "hello") + Frame(2, std::string(70000, 'e')) + Frame(1, "") + Frame(1, "!");
  Collected c;
  for (char ch : stream) ASSERT_TRUE(c.demux.Feed(std::string_view(&ch, 1)));
  EXPECT_EQ(c.out, "hello!");
  EXPECT_EQ(c.err, std::string(70000, 'e'));
  EXPECT_TRUE(c.demux.AtFrameBoundary());
}

TEST(StdDemuxerTest, ReportsATruncatedFrame) {
  Collected c;
  const std::string frame = Frame(1, "abcdef");
  EXPECT_TRUE(c.demux.Feed(frame.substr(0, 10)));
  EXPECT_EQ(c.out, "ab");
  EXPECT_FALSE(c.demux.AtFrameBoundary());
}

TEST(StdDemuxerTest, RejectsAStreamThatIsNotMultiplexed) {
  Collected c;
  EXPECT_FALSE(c.demux.Feed("plain text output from a tty\n"));
  EXPECT_FALSE(c.demux.Feed(Frame(1, "late")));
  EXPECT_EQ(c.out, "");
}

}  // namespace
}  // namespace dockerclient
