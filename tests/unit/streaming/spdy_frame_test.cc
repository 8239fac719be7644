#include "streaming/spdy/frame.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace streaming::spdy {
namespace {

using namespace std::string_literals;

// "80 03 00 06" -> the bytes; spaces are ignored.
std::string Hex(std::string_view text) {
  std::string bytes;
  std::string digits;
  for (char c : text) {
    if (c == ' ') continue;
    digits.push_back(c);
    if (digits.size() == 2) {
      bytes.push_back(static_cast<char>(std::stoi(digits, nullptr, 16)));
      digits.clear();
    }
  }
  return bytes;
}

std::string Text(const Headers& headers) {
  std::vector<std::string> pairs;
  for (const auto& [name, value] : headers) {
    pairs.push_back(absl::StrCat(name, "=", absl::StrReplaceAll(value, {{"\0"s, "|"}})));
  }
  return absl::StrCat("[", absl::StrJoin(pairs, " "), "]");
}

// One line per frame, so that expectations read like the wire and diffs stay short.
struct Describe {
  std::string operator()(const SynStream& f) const {
    return absl::StrCat("SYN_STREAM id=", f.stream_id, " assoc=", f.associated_to, " pri=", f.priority,
                        " slot=", f.slot, " flags=", f.flags, " ", Text(f.headers));
  }
  std::string operator()(const SynReply& f) const {
    return absl::StrCat("SYN_REPLY id=", f.stream_id, " flags=", f.flags, " ", Text(f.headers));
  }
  std::string operator()(const HeadersFrame& f) const {
    return absl::StrCat("HEADERS id=", f.stream_id, " flags=", f.flags, " ", Text(f.headers));
  }
  std::string operator()(const RstStream& f) const {
    return absl::StrCat("RST_STREAM id=", f.stream_id, " status=", f.status);
  }
  std::string operator()(const Settings& f) const {
    std::string out = absl::StrCat("SETTINGS flags=", f.flags);
    for (const SettingsEntry& e : f.entries) absl::StrAppend(&out, " ", e.flags, ":", e.id, "=", e.value);
    return out;
  }
  std::string operator()(const Ping& f) const { return absl::StrCat("PING ", f.id); }
  std::string operator()(const GoAway& f) const {
    return absl::StrCat("GOAWAY last=", f.last_good_stream_id, " status=", f.status);
  }
  std::string operator()(const WindowUpdate& f) const {
    return absl::StrCat("WINDOW_UPDATE id=", f.stream_id, " delta=", f.delta);
  }
  std::string operator()(const UnknownControl& f) const { return absl::StrCat("UNKNOWN type=", f.type); }
};

// Logs control frames and data; consecutive pieces of one stream merge into one line,
// so the log does not depend on how the input was split.
struct Recorder : FrameParser::Handler {
  std::vector<std::string> log;
  std::vector<std::pair<std::string, bool>> pieces;  // every OnData call: payload, fin
  bool in_data = false;

  void OnControl(ControlFrame frame) override {
    log.push_back(std::visit(Describe{}, frame));
    in_data = false;
  }
  void OnData(uint32_t stream_id, std::string_view piece, bool fin) override {
    pieces.emplace_back(piece, fin);
    const std::string prefix = absl::StrCat("DATA ", stream_id, " ");
    if (!in_data || !log.back().starts_with(prefix)) log.push_back(prefix);
    log.back().append(piece);
    in_data = !fin;
    if (fin) log.push_back(absl::StrCat("FIN ", stream_id));
  }
};

std::string DataFrame(uint32_t stream_id, uint8_t flags, std::string_view payload) {
  const auto header = FrameWriter::DataHeader(stream_id, flags, static_cast<uint32_t>(payload.size()));
  return std::string(header.begin(), header.end()) + std::string(payload);
}

std::vector<std::string> ParseWhole(std::string_view bytes) {
  FrameParser parser;
  Recorder recorder;
  const absl::Status status = parser.Feed(bytes, recorder);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_TRUE(parser.AtFrameBoundary());
  return recorder.log;
}

absl::Status FeedStatus(std::string_view bytes, ParserLimits limits = {}) {
  FrameParser parser(limits);
  Recorder recorder;
  return parser.Feed(bytes, recorder);
}

ParserLimits ControlLimit(std::size_t max_control_payload) {
  ParserLimits limits;
  limits.max_control_payload = max_control_payload;
  return limits;
}

const Headers kCapturedHeaders = {{"streamtype", "stdout"}, {"requestid", "0"}, {"port", "80"}};

// Every frame type, as one connection direction would carry them. One statement per
// header-carrying frame: the compression context requires this order on the wire.
std::string EveryFrameType() {
  FrameWriter writer;
  std::string bytes = writer.SynStream({.stream_id = 1, .headers = kCapturedHeaders});
  bytes += writer.SynStream({.stream_id = 3,
                             .associated_to = 1,
                             .priority = 7,
                             .slot = 2,
                             .flags = kFlagFin | kFlagUnidirectional,
                             .headers = {{"streamtype", "error"}, {"multi", "a\0b"s}}});
  bytes += writer.SynReply(2, kFlagFin, {});
  bytes += writer.Headers(3, 0, {{"empty", ""}});
  bytes += FrameWriter::RstStream(5, RstStatus::kCancel);
  bytes += FrameWriter::Settings(
      {.flags = 1, .entries = {{.flags = 1, .id = 7, .value = 65536}, {.id = 4, .value = 100}}});
  bytes += FrameWriter::Ping(0xfffffffe);
  bytes += FrameWriter::GoAway(7, GoAwayStatus::kProtocolError);
  bytes += FrameWriter::WindowUpdate(0, 0x7fffffff);
  bytes += DataFrame(1, 0, "hello");
  bytes += DataFrame(1, kFlagFin, " world");
  bytes += DataFrame(3, kFlagFin, "");
  return bytes;
}

const std::vector<std::string> kEveryFrameTypeLog = {
    "SYN_STREAM id=1 assoc=0 pri=0 slot=0 flags=0 [streamtype=stdout requestid=0 port=80]",
    "SYN_STREAM id=3 assoc=1 pri=7 slot=2 flags=3 [streamtype=error multi=a|b]",
    "SYN_REPLY id=2 flags=1 []",
    "HEADERS id=3 flags=0 [empty=]",
    "RST_STREAM id=5 status=5",
    "SETTINGS flags=1 1:7=65536 0:4=100",
    "PING 4294967294",
    "GOAWAY last=7 status=1",
    "WINDOW_UPDATE id=0 delta=2147483647",
    "DATA 1 hello world",
    "FIN 1",
    "DATA 3 ",
    "FIN 3",
};

TEST(SpdyFrameWriterTest, ServerSynReplyMatchesTheCapture) {
  FrameWriter writer;
  EXPECT_EQ(writer.SynReply(1, 0, {}),
            Hex("80 03 00 02 00 00 00 14 00 00 00 01 78 f9 e3 c6 a7 c2 62 60 60 60 00 00 00 00 ff ff"));
}

TEST(SpdyFrameWriterTest, ClientSynStreamHasTheCapturedLayout) {
  FrameWriter writer;
  const std::string frame = writer.SynStream({.stream_id = 1, .headers = kCapturedHeaders});
  ASSERT_GT(frame.size(), 24u);
  EXPECT_EQ(frame.substr(0, 5), Hex("80 03 00 01 00"));
  EXPECT_EQ(ReadBigEndian(std::string_view(frame).substr(5, 3)), frame.size() - kFrameHeaderSize);
  EXPECT_EQ(frame.substr(8, 16), Hex("00 00 00 01 00 00 00 00 00 00 78 f9 e3 c6 a7 c2"));
  EXPECT_EQ(frame.substr(frame.size() - 4), Hex("00 00 ff ff"));
  EXPECT_EQ(ParseWhole(frame),
            std::vector<std::string>{
                "SYN_STREAM id=1 assoc=0 pri=0 slot=0 flags=0 [streamtype=stdout requestid=0 port=80]"});
}

TEST(SpdyFrameWriterTest, FixedSizeFramesHaveTheSpecLayout) {
  EXPECT_EQ(FrameWriter::RstStream(3, RstStatus::kCancel), Hex("80 03 00 03 00 00 00 08 00 00 00 03 00 00 00 05"));
  EXPECT_EQ(FrameWriter::Ping(1), Hex("80 03 00 06 00 00 00 04 00 00 00 01"));
  EXPECT_EQ(FrameWriter::GoAway(5, GoAwayStatus::kOk), Hex("80 03 00 07 00 00 00 08 00 00 00 05 00 00 00 00"));
  EXPECT_EQ(FrameWriter::WindowUpdate(1, 0x10000), Hex("80 03 00 09 00 00 00 08 00 00 00 01 00 01 00 00"));
  EXPECT_EQ(FrameWriter::Settings({.flags = 1, .entries = {{.flags = 1, .id = 7, .value = 0x10000}}}),
            Hex("80 03 00 04 01 00 00 0c 00 00 00 01 01 00 00 07 00 01 00 00"));
  EXPECT_EQ(DataFrame(3, kFlagFin, ""), Hex("00 00 00 03 01 00 00 00"));
  EXPECT_EQ(DataFrame(5, 0, "ab"), Hex("00 00 00 05 00 00 00 02 61 62"));
}

TEST(SpdyFrameWriterTest, AlwaysWritesTheReservedBitAsZero) {
  EXPECT_EQ(FrameWriter::RstStream(0x80000003, RstStatus::kCancel),
            Hex("80 03 00 03 00 00 00 08 00 00 00 03 00 00 00 05"));
  EXPECT_EQ(FrameWriter::GoAway(0xffffffff, GoAwayStatus::kOk), Hex("80 03 00 07 00 00 00 08 7f ff ff ff 00 00 00 00"));
  EXPECT_EQ(FrameWriter::WindowUpdate(0x80000001, 0xffffffff), Hex("80 03 00 09 00 00 00 08 00 00 00 01 7f ff ff ff"));
  EXPECT_EQ(DataFrame(0x80000001, 0, ""), Hex("00 00 00 01 00 00 00 00"));
  FrameWriter writer;
  EXPECT_EQ(writer.SynReply(0x80000001, 0, {}).substr(8, 4), Hex("00 00 00 01"));
}

TEST(SpdyFrameParserTest, RoundTripsEveryFrameType) { EXPECT_EQ(ParseWhole(EveryFrameType()), kEveryFrameTypeLog); }

TEST(SpdyFrameParserTest, FedByteByByteEqualsFedAtOnce) {
  const std::string bytes = EveryFrameType();
  FrameParser parser;
  Recorder recorder;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const absl::Status status = parser.Feed(bytes.substr(i, 1), recorder);
    ASSERT_TRUE(status.ok()) << "byte " << i << ": " << status;
  }
  EXPECT_TRUE(parser.AtFrameBoundary());
  EXPECT_EQ(recorder.log, kEveryFrameTypeLog);
}

TEST(SpdyFrameParserTest, EmptyFeedChangesNothing) {
  FrameParser parser;
  Recorder recorder;
  EXPECT_TRUE(parser.Feed("", recorder).ok());
  EXPECT_TRUE(parser.AtFrameBoundary());
  EXPECT_TRUE(recorder.log.empty());
}

TEST(SpdyFrameParserTest, StreamsDataPiecesAsTheyArrive) {
  const std::string frame = DataFrame(7, kFlagFin, "hello");
  FrameParser parser;
  Recorder recorder;
  ASSERT_TRUE(parser.Feed(frame.substr(0, 10), recorder).ok());
  EXPECT_FALSE(parser.AtFrameBoundary());
  ASSERT_TRUE(parser.Feed(frame.substr(10), recorder).ok());
  EXPECT_TRUE(parser.AtFrameBoundary());
  using Piece = std::pair<std::string, bool>;
  EXPECT_EQ(recorder.pieces, (std::vector<Piece>{{"he", false}, {"llo", true}}));
}

TEST(SpdyFrameParserTest, EmptyFinFrameGivesOneEmptyPiece) {
  FrameParser parser;
  Recorder recorder;
  ASSERT_TRUE(parser.Feed(Hex("00 00 00 03 01 00 00 00"), recorder).ok());
  EXPECT_EQ(recorder.pieces, (std::vector<std::pair<std::string, bool>>{{"", true}}));
  EXPECT_TRUE(parser.AtFrameBoundary());
}

TEST(SpdyFrameParserTest, EmptyDataFrameWithoutFinGivesNoPiece) {
  FrameParser parser;
  Recorder recorder;
  ASSERT_TRUE(parser.Feed(Hex("00 00 00 03 00 00 00 00"), recorder).ok());
  EXPECT_TRUE(recorder.pieces.empty());
}

TEST(SpdyFrameParserTest, MasksTheReservedBitOfStreamIds) {
  EXPECT_EQ(ParseWhole(Hex("80 03 00 03 00 00 00 08 80 00 00 03 00 00 00 05"
                           "80 03 00 07 00 00 00 08 ff ff ff ff 00 00 00 00"
                           "80 03 00 09 00 00 00 08 80 00 00 01 80 00 00 10")),
            (std::vector<std::string>{"RST_STREAM id=3 status=5", "GOAWAY last=2147483647 status=0",
                                      "WINDOW_UPDATE id=1 delta=16"}));
}

TEST(SpdyFrameParserTest, SkipsUnknownControlTypes) {
  // NOOP (5, SPDY/2 only) with a payload, CREDENTIAL (10) longer than the control
  // limit, and an empty type 0xffff, each followed by a frame that must still parse.
  const std::string bytes = Hex("80 03 00 05 00 00 00 03 aa bb cc") + FrameWriter::Ping(1) +
                            Hex("80 03 00 0a 00 00 00 20") + std::string(32, 'x') + FrameWriter::Ping(3) +
                            Hex("80 03 ff ff 00 00 00 00") + DataFrame(1, kFlagFin, "z");
  FrameParser parser(ControlLimit(16));
  Recorder recorder;
  ASSERT_TRUE(parser.Feed(bytes, recorder).ok());
  EXPECT_EQ(recorder.log, (std::vector<std::string>{"UNKNOWN type=5", "PING 1", "UNKNOWN type=10", "PING 3",
                                                    "UNKNOWN type=65535", "DATA 1 z", "FIN 1"}));
}

TEST(SpdyFrameParserTest, HeaderFramesNeedTheConnectionsCompressionContext) {
  FrameWriter writer;
  const std::string first = writer.SynStream({.stream_id = 1, .headers = kCapturedHeaders});
  const std::string second = writer.SynStream({.stream_id = 3, .headers = kCapturedHeaders});
  EXPECT_EQ(ParseWhole(first + second).size(), 2u);
  EXPECT_EQ(FeedStatus(second).code(), absl::StatusCode::kInvalidArgument);
}

TEST(SpdyFrameParserTest, AcceptsAControlFrameExactlyAtTheLimit) {
  FrameParser parser(ControlLimit(12));
  Recorder recorder;
  EXPECT_TRUE(parser.Feed(FrameWriter::Settings({.entries = {{.id = 4, .value = 1}}}), recorder).ok());
  EXPECT_EQ(recorder.log, std::vector<std::string>{"SETTINGS flags=0 0:4=1"});
}

TEST(SpdyFrameParserTest, RejectsAnOversizedControlFrameFromItsHeader) {
  // Only the header is fed: the parser must not wait to buffer the payload.
  EXPECT_EQ(FeedStatus(Hex("80 03 00 04 00 00 00 14"), ControlLimit(12)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SpdyFrameParserTest, RejectsAHeaderBlockBeyondTheInflateLimit) {
  FrameWriter writer;
  const std::string frame = writer.SynReply(1, 0, {{"big", std::string(2000, 'x')}});
  ParserLimits limits;
  limits.header_block.max_decompressed_bytes = 1000;
  EXPECT_EQ(FeedStatus(frame, limits).code(), absl::StatusCode::kInvalidArgument);
  limits.header_block.max_decompressed_bytes = 3000;
  EXPECT_TRUE(FeedStatus(frame, limits).ok());
}

TEST(SpdyFrameParserTest, RefusesInputAfterAnError) {
  FrameParser parser;
  Recorder recorder;
  EXPECT_EQ(parser.Feed(Hex("00 00 00 00 00 00 00 00"), recorder).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parser.Feed(FrameWriter::Ping(1), recorder).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(recorder.log.empty());
}

struct MalformedCase {
  std::string name;
  std::string bytes;
};

std::vector<MalformedCase> MalformedCases() {
  FrameWriter writer;
  const std::string reply = writer.SynReply(1, 0, kCapturedHeaders);
  const std::string block = reply.substr(12);
  // `payload` framed as a control frame of `type`, with a correct length.
  const auto control = [](uint16_t type, std::string_view payload) {
    std::string frame = Hex("80 03");
    AppendBigEndian(frame, type, 2);
    AppendBigEndian(frame, static_cast<uint32_t>(payload.size()), 4);
    return frame + std::string(payload);
  };
  return {
      {"WrongVersion", Hex("80 02 00 06 00 00 00 04 00 00 00 01")},
      {"DataOnStreamZero", Hex("00 00 00 00 01 00 00 00")},
      {"SynStreamShorterThanTen", control(1, Hex("00 00 00 01 00 00 00 00 00"))},
      {"SynStreamOnStreamZero", FrameWriter().SynStream({.stream_id = 0, .headers = kCapturedHeaders})},
      {"SynStreamWithoutBlock", control(1, Hex("00 00 00 01 00 00 00 00 00 00"))},
      {"SynReplyShorterThanStreamId", control(2, Hex("00 00 01"))},
      {"SynReplyOnStreamZero", FrameWriter().SynReply(0, 0, {})},
      {"SynReplyWithGarbageBlock", control(2, Hex("00 00 00 01") + "not zlib")},
      {"SynReplyWithTruncatedBlock", control(2, Hex("00 00 00 01") + block.substr(0, block.size() / 2))},
      {"SynReplyWithTwoBlocks", control(2, Hex("00 00 00 01") + block + writer.SynReply(3, 0, {}).substr(12))},
      {"HeadersOnStreamZero", FrameWriter().Headers(0, 0, {})},
      {"RstStreamTooShort", Hex("80 03 00 03 00 00 00 04 00 00 00 01")},
      {"RstStreamTooLong", Hex("80 03 00 03 00 00 00 0c 00 00 00 01 00 00 00 05 00 00 00 00")},
      {"RstStreamOnStreamZero", Hex("80 03 00 03 00 00 00 08 00 00 00 00 00 00 00 05")},
      {"RstStreamStatusZero", Hex("80 03 00 03 00 00 00 08 00 00 00 01 00 00 00 00")},
      {"SettingsWithoutCount", Hex("80 03 00 04 00 00 00 00")},
      {"SettingsCountBeyondLength", Hex("80 03 00 04 00 00 00 0c 00 00 00 02 00 00 00 04 00 00 00 01")},
      {"SettingsCountShortOfLength", Hex("80 03 00 04 00 00 00 0c 00 00 00 00 00 00 00 04 00 00 00 01")},
      {"SettingsHugeCount", Hex("80 03 00 04 00 00 00 04 ff ff ff ff")},
      {"PingTooLong", Hex("80 03 00 06 00 00 00 08 00 00 00 01 00 00 00 00")},
      {"PingIdZero", Hex("80 03 00 06 00 00 00 04 00 00 00 00")},
      {"GoAwayTooShort", Hex("80 03 00 07 00 00 00 04 00 00 00 01")},
      {"WindowUpdateTooShort", Hex("80 03 00 09 00 00 00 04 00 00 00 01")},
  };
}

class SpdyMalformedFrameTest : public testing::TestWithParam<MalformedCase> {};

TEST_P(SpdyMalformedFrameTest, IsInvalidArgumentFedWholeAndByteByByte) {
  const std::string& bytes = GetParam().bytes;
  EXPECT_EQ(FeedStatus(bytes).code(), absl::StatusCode::kInvalidArgument);

  FrameParser parser;
  Recorder recorder;
  absl::Status status;
  for (std::size_t i = 0; i < bytes.size() && status.ok(); ++i) status = parser.Feed(bytes.substr(i, 1), recorder);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(recorder.log.empty());
}

INSTANTIATE_TEST_SUITE_P(Spdy, SpdyMalformedFrameTest, testing::ValuesIn(MalformedCases()),
                         [](const testing::TestParamInfo<MalformedCase>& info) { return info.param.name; });

}  // namespace
}  // namespace streaming::spdy
