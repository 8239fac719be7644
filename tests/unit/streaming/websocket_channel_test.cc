#include "streaming/websocket/channel.h"

#include <gtest/gtest.h>

#include <string>

namespace streaming::websocket {
namespace {

using Kind = Subprotocol::Kind;

// Checks every field of a negotiation result.
void ExpectChosen(const std::optional<Subprotocol>& got, std::string_view name, Kind kind, Encoding encoding,
                  int version) {
  ASSERT_TRUE(got.has_value()) << "want " << name;
  EXPECT_EQ(got->name, name);
  EXPECT_EQ(got->kind, kind);
  EXPECT_EQ(got->encoding, encoding);
  EXPECT_EQ(got->version, version);
}

TEST(NegotiateRemoteCommandTest, MapsEachNameToItsEncodingAndVersion) {
  ExpectChosen(NegotiateRemoteCommand("channel.k8s.io"), "channel.k8s.io", Kind::kChannels, Encoding::kBinary, 1);
  ExpectChosen(NegotiateRemoteCommand("base64.channel.k8s.io"), "base64.channel.k8s.io", Kind::kChannels,
               Encoding::kBase64, 1);
  ExpectChosen(NegotiateRemoteCommand("v4.channel.k8s.io"), "v4.channel.k8s.io", Kind::kChannels, Encoding::kBinary, 4);
  ExpectChosen(NegotiateRemoteCommand("v4.base64.channel.k8s.io"), "v4.base64.channel.k8s.io", Kind::kChannels,
               Encoding::kBase64, 4);
  ExpectChosen(NegotiateRemoteCommand("v5.channel.k8s.io"), "v5.channel.k8s.io", Kind::kChannels, Encoding::kBinary, 5);
}

TEST(NegotiateRemoteCommandTest, ClientOrderWins) {
  ExpectChosen(NegotiateRemoteCommand("v4.base64.channel.k8s.io, v5.channel.k8s.io, channel.k8s.io"),
               "v4.base64.channel.k8s.io", Kind::kChannels, Encoding::kBase64, 4);
  ExpectChosen(NegotiateRemoteCommand("channel.k8s.io,v5.channel.k8s.io"), "channel.k8s.io", Kind::kChannels,
               Encoding::kBinary, 1);
}

TEST(NegotiateRemoteCommandTest, SkipsUnknownEntriesAndTrimsSpaces) {
  ExpectChosen(NegotiateRemoteCommand("  v9.channel.k8s.io ,\tv5.channel.k8s.io  "), "v5.channel.k8s.io",
               Kind::kChannels, Encoding::kBinary, 5);
}

TEST(NegotiateRemoteCommandTest, EmptyOfferSelectsLegacyBinary) {
  ExpectChosen(NegotiateRemoteCommand(""), "", Kind::kChannels, Encoding::kBinary, 1);
  ExpectChosen(NegotiateRemoteCommand("   "), "", Kind::kChannels, Encoding::kBinary, 1);
}

TEST(NegotiateRemoteCommandTest, RefusesAnOfferOfUnknownNamesOnly) {
  EXPECT_FALSE(NegotiateRemoteCommand("v9.channel.k8s.io").has_value());
  // Only binary exists for v5, and SPDY names are not WebSocket subprotocols.
  EXPECT_FALSE(NegotiateRemoteCommand("v5.base64.channel.k8s.io").has_value());
  EXPECT_FALSE(NegotiateRemoteCommand("v3.channel.k8s.io, v2.channel.k8s.io").has_value());
  // Matching is exact: no case folding, no prefix match.
  EXPECT_FALSE(NegotiateRemoteCommand("V4.CHANNEL.K8S.IO, v4.channel.k8s.io.x").has_value());
}

TEST(NegotiateRemoteCommandTest, RefusesTheTunnel) {
  EXPECT_FALSE(NegotiateRemoteCommand("SPDY/3.1+portforward.k8s.io").has_value());
}

TEST(NegotiatePortForwardTest, MapsEachNameToItsKindAndEncoding) {
  ExpectChosen(NegotiatePortForward("v4.channel.k8s.io"), "v4.channel.k8s.io", Kind::kChannels, Encoding::kBinary, 4);
  ExpectChosen(NegotiatePortForward("v4.base64.channel.k8s.io"), "v4.base64.channel.k8s.io", Kind::kChannels,
               Encoding::kBase64, 4);
  ExpectChosen(NegotiatePortForward("SPDY/3.1+portforward.k8s.io"), "SPDY/3.1+portforward.k8s.io", Kind::kSpdyTunnel,
               Encoding::kBinary, 4);
  ExpectChosen(NegotiatePortForward("portforward.k8s.io"), "portforward.k8s.io", Kind::kChannels, Encoding::kBinary, 4);
  ExpectChosen(NegotiatePortForward("base64.portforward.k8s.io"), "base64.portforward.k8s.io", Kind::kChannels,
               Encoding::kBase64, 4);
}

TEST(NegotiatePortForwardTest, EmptyOfferSelectsLegacyBinary) {
  ExpectChosen(NegotiatePortForward(""), "", Kind::kChannels, Encoding::kBinary, 4);
}

TEST(NegotiatePortForwardTest, ClientOrderWins) {
  ExpectChosen(NegotiatePortForward("SPDY/3.1+portforward.k8s.io, v4.channel.k8s.io"), "SPDY/3.1+portforward.k8s.io",
               Kind::kSpdyTunnel, Encoding::kBinary, 4);
  ExpectChosen(NegotiatePortForward("v4.base64.channel.k8s.io,SPDY/3.1+portforward.k8s.io"), "v4.base64.channel.k8s.io",
               Kind::kChannels, Encoding::kBase64, 4);
}

TEST(NegotiatePortForwardTest, RefusesRemoteCommandNames) {
  EXPECT_FALSE(NegotiatePortForward("v5.channel.k8s.io").has_value());
  EXPECT_FALSE(NegotiatePortForward("channel.k8s.io, base64.channel.k8s.io").has_value());
}

TEST(EncodeMessageTest, BinaryPrefixesTheChannelByte) {
  EXPECT_EQ(EncodeMessage(Encoding::kBinary, 1, "hello"), std::string("\x01hello"));
  EXPECT_EQ(EncodeMessage(Encoding::kBinary, 0, ""), std::string(1, '\0'));
  EXPECT_EQ(EncodeMessage(Encoding::kBinary, 2, std::string("a\0b", 3)),
            std::string(1, '\x02') + std::string("a\0b", 3));
}

TEST(EncodeMessageTest, Base64PrefixesTheChannelDigit) {
  EXPECT_EQ(EncodeMessage(Encoding::kBase64, 1, "hello"), "1aGVsbG8=");
  EXPECT_EQ(EncodeMessage(Encoding::kBase64, 3, ""), "3");
  // Port-forward channels above 9 continue past '9' in ASCII.
  EXPECT_EQ(EncodeMessage(Encoding::kBase64, 10, "hi"), ":aGk=");
  EXPECT_EQ(EncodeMessage(Encoding::kBase64, 11, "hi"), ";aGk=");
}

TEST(EncodeMessageTest, ConnectedSignalIsAnEmptyMessage) {
  EXPECT_EQ(EncodeMessage(Encoding::kBinary, 1, ""), "\x01");
  EXPECT_EQ(EncodeMessage(Encoding::kBase64, 1, ""), "1");
}

TEST(DecodeMessageTest, EmptyMessageCarriesNothing) {
  for (Encoding encoding : {Encoding::kBinary, Encoding::kBase64}) {
    absl::StatusOr<std::optional<Message>> got = DecodeMessage(encoding, "");
    ASSERT_TRUE(got.ok());
    EXPECT_FALSE(got->has_value());
  }
}

TEST(DecodeMessageTest, SplitsBinaryChannelAndPayload) {
  absl::StatusOr<std::optional<Message>> got = DecodeMessage(Encoding::kBinary, std::string("\x00ls -l\n\xff", 8));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->channel, 0);
  EXPECT_EQ((*got)->payload, "ls -l\n\xff");
}

TEST(DecodeMessageTest, DecodesBase64Payload) {
  absl::StatusOr<std::optional<Message>> got = DecodeMessage(Encoding::kBase64, "4eyJXaWR0aCI6ODB9");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->channel, 4);
  EXPECT_EQ((*got)->payload, R"({"Width":80})");
}

TEST(DecodeMessageTest, ChannelByteAloneIsAnEmptyPayload) {
  for (Encoding encoding : {Encoding::kBinary, Encoding::kBase64}) {
    absl::StatusOr<std::optional<Message>> got = DecodeMessage(encoding, encoding == Encoding::kBinary ? "\x02" : "2");
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->channel, 2);
    EXPECT_EQ((*got)->payload, "");
  }
}

TEST(DecodeMessageTest, RejectsInvalidBase64) {
  absl::StatusOr<std::optional<Message>> got = DecodeMessage(Encoding::kBase64, "0not*base64");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DecodeMessageTest, RoundTripsEveryChannelInBothEncodings) {
  const std::string payload("\x00\x01 bytes \xfe\xff", 11);
  for (Encoding encoding : {Encoding::kBinary, Encoding::kBase64}) {
    for (int channel = 0; channel <= 255; ++channel) {
      const std::string wire = EncodeMessage(encoding, static_cast<uint8_t>(channel), payload);
      absl::StatusOr<std::optional<Message>> got = DecodeMessage(encoding, wire);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_TRUE(got->has_value());
      EXPECT_EQ((*got)->channel, channel);
      EXPECT_EQ((*got)->payload, payload);
    }
  }
}

TEST(CloseSignalTest, EncodesAndDecodesTheChannel) {
  EXPECT_EQ(EncodeCloseSignal(0), std::string("\xff\x00", 2));
  absl::StatusOr<std::optional<Message>> got = DecodeMessage(Encoding::kBinary, EncodeCloseSignal(0));
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->channel, kCloseSignal);
  absl::StatusOr<uint8_t> channel = CloseSignalChannel(**got);
  ASSERT_TRUE(channel.ok()) << channel.status();
  EXPECT_EQ(*channel, 0);
}

TEST(CloseSignalTest, RejectsAPayloadThatIsNotOneByte) {
  EXPECT_EQ(CloseSignalChannel(Message{kCloseSignal, ""}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CloseSignalChannel(Message{kCloseSignal, "\x00\x01"}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CloseSignalTest, RejectsAnOrdinaryMessage) {
  EXPECT_EQ(CloseSignalChannel(Message{0, std::string(1, '\0')}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PortPrefixTest, IsLittleEndian) {
  EXPECT_EQ(EncodePortPrefix(8080), "\x90\x1f");
  EXPECT_EQ(EncodePortPrefix(1), std::string("\x01\x00", 2));
  EXPECT_EQ(EncodePortPrefix(65535), "\xff\xff");
}

TEST(PortPrefixTest, MatchesTheUpstreamFirstMessages) {
  const std::string prefix = EncodePortPrefix(8080);
  EXPECT_EQ(EncodeMessage(Encoding::kBinary, 0, prefix), std::string("\x00\x90\x1f", 3));
  EXPECT_EQ(EncodeMessage(Encoding::kBinary, 1, prefix), "\x01\x90\x1f");
  EXPECT_EQ(EncodeMessage(Encoding::kBase64, 0, prefix), "0kB8=");
  EXPECT_EQ(EncodeMessage(Encoding::kBase64, 1, prefix), "1kB8=");
}

}  // namespace
}  // namespace streaming::websocket
