#include "streaming/remotecommand/protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

namespace streaming::remotecommand {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::vector<std::string_view> kSpdy(std::begin(kSpdyRemoteCommandProtocols),
                                          std::end(kSpdyRemoteCommandProtocols));

TEST(NegotiateProtocolTest, PicksV4FromClientGosOffer) {
  // One header line per protocol, as client-go sends them.
  const std::vector<std::string> offered = {"v5.channel.k8s.io", "v4.channel.k8s.io", "v3.channel.k8s.io",
                                            "v2.channel.k8s.io", "channel.k8s.io"};
  EXPECT_EQ(NegotiateProtocol(offered, kSpdy), "v4.channel.k8s.io");
}

TEST(NegotiateProtocolTest, ClientOrderWinsOverServerOrder) {
  EXPECT_EQ(NegotiateProtocol({"v2.channel.k8s.io", "v4.channel.k8s.io"}, kSpdy), "v2.channel.k8s.io");
}

TEST(NegotiateProtocolTest, SplitsCommaSeparatedLinesAndTrimsEntries) {
  EXPECT_EQ(NegotiateProtocol({"v9.channel.k8s.io,  v3.channel.k8s.io ,v4.channel.k8s.io"}, kSpdy),
            "v3.channel.k8s.io");
  EXPECT_EQ(NegotiateProtocol({"x, y", " channel.k8s.io"}, kSpdy), "channel.k8s.io");
}

TEST(NegotiateProtocolTest, NoMatchIsNullopt) {
  EXPECT_EQ(NegotiateProtocol({"v5.channel.k8s.io"}, kSpdy), std::nullopt);
  EXPECT_EQ(NegotiateProtocol({}, kSpdy), std::nullopt);
  EXPECT_EQ(NegotiateProtocol({"", " , "}, kSpdy), std::nullopt);
  EXPECT_EQ(NegotiateProtocol({"v4.channel.k8s.io"}, {kPortForwardProtocol}), std::nullopt);
}

TEST(NegotiateProtocolTest, PortForward) {
  EXPECT_EQ(NegotiateProtocol({"portforward.k8s.io"}, {kPortForwardProtocol}), "portforward.k8s.io");
}

TEST(VersionOfTest, NamesTheFiveVersions) {
  EXPECT_EQ(VersionOf("channel.k8s.io"), Version::kV1);
  EXPECT_EQ(VersionOf("v2.channel.k8s.io"), Version::kV2);
  EXPECT_EQ(VersionOf("v3.channel.k8s.io"), Version::kV3);
  EXPECT_EQ(VersionOf("v4.channel.k8s.io"), Version::kV4);
  EXPECT_EQ(VersionOf("v5.channel.k8s.io"), Version::kV5);
  EXPECT_EQ(VersionOf("portforward.k8s.io"), std::nullopt);
  EXPECT_EQ(VersionOf(""), std::nullopt);
}

TEST(StatusTest, SuccessMatchesGo) { EXPECT_EQ(SuccessStatus(), R"({"metadata":{},"status":"Success"})"); }

TEST(StatusTest, ExitCodeMatchesGo) {
  EXPECT_EQ(ExitCodeStatus(2, "Error executing in Docker Container: 2"),
            R"({"metadata":{},"status":"Failure",)"
            R"("message":"command terminated with non-zero exit code: Error executing in Docker Container: 2",)"
            R"("reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"2"}]}})");
}

TEST(StatusTest, InternalErrorMatchesGo) {
  EXPECT_EQ(InternalErrorStatus("error executing command in container: no such container"),
            R"({"metadata":{},"status":"Failure",)"
            R"("message":"Internal error occurred: error executing command in container: no such container",)"
            R"("reason":"InternalError",)"
            R"("details":{"causes":[{"message":"error executing command in container: no such container"}]},)"
            R"("code":500})");
}

TEST(StatusTest, EscapesMessages) {
  EXPECT_EQ(
      InternalErrorStatus("exec: \"sh\\x\": not found\n\x01"),
      R"({"metadata":{},"status":"Failure","message":"Internal error occurred: exec: \"sh\\x\": not found\n\u0001",)"
      R"("reason":"InternalError","details":{"causes":[{"message":"exec: \"sh\\x\": not found\n\u0001"}]},)"
      R"("code":500})");
}

TEST(StatusTest, ReplacesInvalidUtf8) {
  const std::string status = ExitCodeStatus(1, "bad \xff byte");
  EXPECT_NE(status.find("bad \xef\xbf\xbd byte"), std::string::npos) << status;
}

// Feeds `stream` to a fresh decoder in pieces of `piece` bytes.
absl::StatusOr<std::vector<TerminalSize>> DecodeInPieces(std::string_view stream, std::size_t piece) {
  ResizeDecoder decoder;
  std::vector<TerminalSize> sizes;
  for (std::size_t at = 0; at < stream.size(); at += piece) {
    absl::Status status = decoder.Feed(stream.substr(at, piece), sizes);
    if (!status.ok()) return status;
  }
  return sizes;
}

absl::StatusOr<std::vector<TerminalSize>> Decode(std::string_view stream) {
  return DecodeInPieces(stream, stream.size());
}

TEST(ResizeDecoderTest, DecodesOneObject) {
  absl::StatusOr<std::vector<TerminalSize>> sizes = Decode(R"({"Width":80,"Height":24})");
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(*sizes, ElementsAre(TerminalSize{80, 24}));
}

TEST(ResizeDecoderTest, DecodesAnObjectSplitAtEveryByte) {
  const std::string stream = R"({"Width":132,"Height":43})";
  for (std::size_t cut = 1; cut < stream.size(); ++cut) {
    ResizeDecoder decoder;
    std::vector<TerminalSize> sizes;
    ASSERT_TRUE(decoder.Feed(stream.substr(0, cut), sizes).ok()) << cut;
    EXPECT_THAT(sizes, IsEmpty()) << cut;
    ASSERT_TRUE(decoder.Feed(stream.substr(cut), sizes).ok()) << cut;
    EXPECT_THAT(sizes, ElementsAre(TerminalSize{132, 43})) << cut;
  }
}

TEST(ResizeDecoderTest, DecodesJsonEncoderOutputFedByteByByte) {
  // json.Encoder ends every object with '\n'.
  absl::StatusOr<std::vector<TerminalSize>> sizes =
      DecodeInPieces("{\"Width\":80,\"Height\":24}\n{\"Width\":100,\"Height\":50}\n", 1);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(*sizes, ElementsAre(TerminalSize{80, 24}, TerminalSize{100, 50}));
}

TEST(ResizeDecoderTest, DecodesTwoObjectsInOneFeed) {
  ResizeDecoder decoder;
  std::vector<TerminalSize> sizes;
  ASSERT_TRUE(decoder.Feed(R"({"Width":1,"Height":2}{"Width":3,"Height":4})", sizes).ok());
  EXPECT_THAT(sizes, ElementsAre(TerminalSize{1, 2}, TerminalSize{3, 4}));
  // The next feed appends; earlier sizes stay.
  ASSERT_TRUE(decoder.Feed(" \t\r\n{\"Width\":5,\"Height\":6}", sizes).ok());
  EXPECT_THAT(sizes, ElementsAre(TerminalSize{1, 2}, TerminalSize{3, 4}, TerminalSize{5, 6}));
}

TEST(ResizeDecoderTest, MatchesKeysCaseInsensitively) {
  absl::StatusOr<std::vector<TerminalSize>> sizes = Decode(R"({"width":80,"HEIGHT":24}{"wIdTh":7})");
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(*sizes, ElementsAre(TerminalSize{80, 24}, TerminalSize{7, 0}));
}

TEST(ResizeDecoderTest, MissingNullAndUnknownKeysLeaveZero) {
  absl::StatusOr<std::vector<TerminalSize>> sizes =
      Decode(R"({}{"Height":9,"Width":null}{"Depth":[1,{"Width":5}],"Note":"}{\"","Width":3})");
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(*sizes, ElementsAre(TerminalSize{0, 0}, TerminalSize{0, 9}, TerminalSize{3, 0}));
}

TEST(ResizeDecoderTest, LastRepeatedKeyWins) {
  absl::StatusOr<std::vector<TerminalSize>> sizes = Decode(R"({"Width":1,"width":2})");
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(*sizes, ElementsAre(TerminalSize{2, 0}));
}

TEST(ResizeDecoderTest, AcceptsTheFullUint16Range) {
  absl::StatusOr<std::vector<TerminalSize>> sizes = Decode(R"({"Width":0,"Height":65535})");
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_THAT(*sizes, ElementsAre(TerminalSize{0, 65535}));
}

TEST(ResizeDecoderTest, RejectsValuesGoCannotStoreInAUint16) {
  for (const char* object : {R"({"Width":65536})", R"({"Width":-1})", R"({"Height":-0})", R"({"Width":80.0})",
                             R"({"Width":8e1})", R"({"Width":"80"})", R"({"Height":true})", R"({"Width":[80]})",
                             R"({"Width":{}})", R"({"Width":99999999999999999999999})"}) {
    EXPECT_EQ(Decode(object).status().code(), absl::StatusCode::kInvalidArgument) << object;
  }
}

TEST(ResizeDecoderTest, RejectsGarbage) {
  for (const char* stream : {"garbage", "[]", "80", "null", "}", R"({"Width":80,})", R"({"Width" 80})", R"({Width:80})",
                             "{\"Width\":80}x"}) {
    EXPECT_EQ(Decode(stream).status().code(), absl::StatusCode::kInvalidArgument) << stream;
  }
}

TEST(ResizeDecoderTest, KeepsSizesDecodedBeforeAnError) {
  ResizeDecoder decoder;
  std::vector<TerminalSize> sizes;
  EXPECT_FALSE(decoder.Feed(R"({"Width":1,"Height":2}oops)", sizes).ok());
  EXPECT_THAT(sizes, ElementsAre(TerminalSize{1, 2}));
}

TEST(ResizeDecoderTest, KeepsFailingAfterAnError) {
  ResizeDecoder decoder;
  std::vector<TerminalSize> sizes;
  const absl::Status first = decoder.Feed("x", sizes);
  ASSERT_EQ(first.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(decoder.Feed(R"({"Width":80,"Height":24})", sizes), first);
  EXPECT_THAT(sizes, IsEmpty());
}

TEST(ResizeDecoderTest, CapsAnObjectAt4KiB) {
  // An unknown key pads the object; the decoder must give up before it ends.
  const auto padded = [](std::size_t total) {
    const std::string head = R"({"Width":1,"pad":")", tail = R"("})";
    return head + std::string(total - head.size() - tail.size(), 'p') + tail;
  };
  absl::StatusOr<std::vector<TerminalSize>> fits = Decode(padded(4096));
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_THAT(*fits, ElementsAre(TerminalSize{1, 0}));
  EXPECT_EQ(DecodeInPieces(padded(4097), 100).status().code(), absl::StatusCode::kInvalidArgument);
  // An unterminated object fails once it passes the cap, without waiting for its end.
  EXPECT_EQ(Decode("{\"pad\":\"" + std::string(5000, 'p')).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ResizeDecoderTest, BracesInsideStringsAndEscapesDoNotEndTheObject) {
  ResizeDecoder decoder;
  std::vector<TerminalSize> sizes;
  ASSERT_TRUE(decoder.Feed(R"({"k":"\"}\\","Width":4)", sizes).ok());
  EXPECT_THAT(sizes, IsEmpty());
  ASSERT_TRUE(decoder.Feed("}", sizes).ok());
  EXPECT_THAT(sizes, ElementsAre(TerminalSize{4, 0}));
}

}  // namespace
}  // namespace streaming::remotecommand
