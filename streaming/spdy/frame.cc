#include "streaming/spdy/frame.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace streaming::spdy {
namespace {

constexpr uint8_t kControlBit = 0x80;

bool IsKnownControlType(uint16_t type) {
  switch (static_cast<ControlType>(type)) {
    case ControlType::kSynStream:
    case ControlType::kSynReply:
    case ControlType::kRstStream:
    case ControlType::kSettings:
    case ControlType::kPing:
    case ControlType::kGoAway:
    case ControlType::kHeaders:
    case ControlType::kWindowUpdate:
      return true;
  }
  return false;
}

absl::Status Malformed(std::string_view frame, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed SPDY ", common::Av(frame), " frame: ", common::Av(what)));
}

uint32_t WordAt(std::string_view payload, std::size_t offset) { return ReadBigEndian(payload.substr(offset, 4)); }
// A 31-bit field; the reserved X bit above it is ignored on read.
uint32_t Word31At(std::string_view payload, std::size_t offset) { return WordAt(payload, offset) & kMaxStreamId; }

absl::Status CheckLength(std::string_view frame, std::string_view payload, std::size_t length) {
  if (payload.size() == length) return absl::OkStatus();
  return Malformed(frame, absl::StrCat("length ", payload.size(), ", not ", length));
}

absl::Status CheckMinLength(std::string_view frame, std::string_view payload, std::size_t length) {
  if (payload.size() >= length) return absl::OkStatus();
  return Malformed(frame, absl::StrCat("length ", payload.size(), ", less than ", length));
}

// The stream id that leads the payload of SYN_STREAM, SYN_REPLY, HEADERS and RST_STREAM.
absl::StatusOr<uint32_t> RequiredStreamId(std::string_view frame, std::string_view payload) {
  const uint32_t id = Word31At(payload, 0);
  if (id == 0) return Malformed(frame, "stream id 0");
  return id;
}

absl::StatusOr<Headers> InflateBlock(std::string_view frame, std::string_view block, HeaderDecompressor& decompressor) {
  absl::StatusOr<Headers> headers = decompressor.Decompress(block);
  if (!headers.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("SPDY ", common::Av(frame), " frame: ", headers.status().message()));
  }
  return headers;
}

absl::StatusOr<ControlFrame> ParseSynStream(uint8_t flags, std::string_view payload,
                                            HeaderDecompressor& decompressor) {
  constexpr std::string_view kName = "SYN_STREAM";
  if (absl::Status s = CheckMinLength(kName, payload, 10); !s.ok()) return s;
  absl::StatusOr<uint32_t> id = RequiredStreamId(kName, payload);
  if (!id.ok()) return id.status();
  absl::StatusOr<Headers> headers = InflateBlock(kName, payload.substr(10), decompressor);
  if (!headers.ok()) return headers.status();
  return SynStream{
      .stream_id = *id,
      .associated_to = Word31At(payload, 4),
      .priority = static_cast<uint8_t>(static_cast<uint8_t>(payload[8]) >> 5),
      .slot = static_cast<uint8_t>(payload[9]),
      .flags = flags,
      .headers = *std::move(headers),
  };
}

// SYN_REPLY and HEADERS share one layout: stream id, then the header block.
template <typename Frame>
absl::StatusOr<ControlFrame> ParseStreamHeaders(std::string_view name, uint8_t flags, std::string_view payload,
                                                HeaderDecompressor& decompressor) {
  if (absl::Status s = CheckMinLength(name, payload, 4); !s.ok()) return s;
  absl::StatusOr<uint32_t> id = RequiredStreamId(name, payload);
  if (!id.ok()) return id.status();
  absl::StatusOr<Headers> headers = InflateBlock(name, payload.substr(4), decompressor);
  if (!headers.ok()) return headers.status();
  return Frame{.stream_id = *id, .flags = flags, .headers = *std::move(headers)};
}

absl::StatusOr<ControlFrame> ParseRstStream(std::string_view payload) {
  constexpr std::string_view kName = "RST_STREAM";
  if (absl::Status s = CheckLength(kName, payload, 8); !s.ok()) return s;
  absl::StatusOr<uint32_t> id = RequiredStreamId(kName, payload);
  if (!id.ok()) return id.status();
  const uint32_t status = WordAt(payload, 4);
  if (status == 0) return Malformed(kName, "status 0");
  return RstStream{.stream_id = *id, .status = status};
}

absl::StatusOr<ControlFrame> ParseSettings(uint8_t flags, std::string_view payload) {
  constexpr std::string_view kName = "SETTINGS";
  if (absl::Status s = CheckMinLength(kName, payload, 4); !s.ok()) return s;
  const uint32_t count = WordAt(payload, 0);
  if (absl::Status s = CheckLength(kName, payload, 4 + 8 * uint64_t{count}); !s.ok()) return s;
  Settings settings{.flags = flags, .entries = {}};
  settings.entries.reserve(count);
  for (std::size_t offset = 4; offset < payload.size(); offset += 8) {
    const uint32_t flags_and_id = WordAt(payload, offset);
    settings.entries.push_back({
        .flags = static_cast<uint8_t>(flags_and_id >> 24),
        .id = flags_and_id & 0xffffff,
        .value = WordAt(payload, offset + 4),
    });
  }
  return settings;
}

absl::StatusOr<ControlFrame> ParsePing(std::string_view payload) {
  if (absl::Status s = CheckLength("PING", payload, 4); !s.ok()) return s;
  const uint32_t id = WordAt(payload, 0);
  if (id == 0) return Malformed("PING", "id 0");
  return Ping{.id = id};
}

absl::StatusOr<ControlFrame> ParseGoAway(std::string_view payload) {
  if (absl::Status s = CheckLength("GOAWAY", payload, 8); !s.ok()) return s;
  return GoAway{.last_good_stream_id = Word31At(payload, 0), .status = WordAt(payload, 4)};
}

absl::StatusOr<ControlFrame> ParseWindowUpdate(std::string_view payload) {
  if (absl::Status s = CheckLength("WINDOW_UPDATE", payload, 8); !s.ok()) return s;
  return WindowUpdate{.stream_id = Word31At(payload, 0), .delta = Word31At(payload, 4)};
}

// `payload` is empty for an unknown type: its bytes were skipped, not buffered.
absl::StatusOr<ControlFrame> ParseControlPayload(uint16_t type, uint8_t flags, std::string_view payload,
                                                 HeaderDecompressor& decompressor) {
  switch (static_cast<ControlType>(type)) {
    case ControlType::kSynStream:
      return ParseSynStream(flags, payload, decompressor);
    case ControlType::kSynReply:
      return ParseStreamHeaders<SynReply>("SYN_REPLY", flags, payload, decompressor);
    case ControlType::kRstStream:
      return ParseRstStream(payload);
    case ControlType::kSettings:
      return ParseSettings(flags, payload);
    case ControlType::kPing:
      return ParsePing(payload);
    case ControlType::kGoAway:
      return ParseGoAway(payload);
    case ControlType::kHeaders:
      return ParseStreamHeaders<HeadersFrame>("HEADERS", flags, payload, decompressor);
    case ControlType::kWindowUpdate:
      return ParseWindowUpdate(payload);
  }
  return UnknownControl{.type = type};
}

std::string ControlFrameBytes(ControlType type, uint8_t flags, std::string_view payload) {
  std::string frame;
  frame.reserve(kFrameHeaderSize + payload.size());
  AppendBigEndian(frame, (uint32_t{kControlBit} << 8) | kVersion, 2);
  AppendBigEndian(frame, static_cast<uint16_t>(type), 2);
  AppendBigEndian(frame, flags, 1);
  AppendBigEndian(frame, static_cast<uint32_t>(payload.size()), 3);
  frame.append(payload);
  return frame;
}

// Two 32-bit words, the first a stream id (RST_STREAM, GOAWAY, WINDOW_UPDATE).
std::string StreamIdAndWord(uint32_t stream_id, uint32_t word) {
  std::string payload;
  AppendBigEndian(payload, stream_id & kMaxStreamId, 4);
  AppendBigEndian(payload, word, 4);
  return payload;
}

// SYN_REPLY or HEADERS: the stream id, then the compressed block.
std::string StreamHeadersFrame(ControlType type, uint32_t stream_id, uint8_t flags, std::string_view block) {
  std::string payload;
  AppendBigEndian(payload, stream_id & kMaxStreamId, 4);
  payload.append(block);
  return ControlFrameBytes(type, flags, payload);
}

}  // namespace

FrameParser::FrameParser(ParserLimits limits) : limits_(limits), decompressor_(limits.header_block) {}

absl::Status FrameParser::Feed(std::string_view bytes, Handler& handler) {
  if (failed_) return absl::FailedPreconditionError("SPDY frame parser fed after an error");
  absl::Status status;
  while (status.ok() && !bytes.empty()) {
    status = phase_ == Phase::kHeader ? ReadHeader(bytes, handler) : ReadPayload(bytes, handler);
  }
  failed_ = !status.ok();
  return status;
}

bool FrameParser::AtFrameBoundary() const { return phase_ == Phase::kHeader && header_fill_ == 0; }

absl::Status FrameParser::ReadHeader(std::string_view& bytes, Handler& handler) {
  const std::size_t take = std::min(kFrameHeaderSize - header_fill_, bytes.size());
  std::copy_n(bytes.data(), take, header_.data() + header_fill_);
  header_fill_ += take;
  bytes.remove_prefix(take);
  if (header_fill_ < kFrameHeaderSize) return absl::OkStatus();
  header_fill_ = 0;
  const std::string_view header(header_.data(), header_.size());
  frame_flags_ = static_cast<uint8_t>(header[4]);
  remaining_ = ReadBigEndian(header.substr(5, 3));
  if (static_cast<uint8_t>(header[0]) & kControlBit) return StartControl(header, handler);
  return StartData(header, handler);
}

absl::Status FrameParser::StartData(std::string_view header, Handler& handler) {
  data_stream_ = ReadBigEndian(header.substr(0, 4));
  if (data_stream_ == 0) return Malformed("DATA", "stream id 0");
  if (remaining_ > 0) {
    phase_ = Phase::kData;
  } else if (frame_flags_ & kFlagFin) {
    handler.OnData(data_stream_, {}, true);
  }
  return absl::OkStatus();
}

absl::Status FrameParser::StartControl(std::string_view header, Handler& handler) {
  const uint32_t version = ReadBigEndian(header.substr(0, 2)) & 0x7fff;
  control_type_ = static_cast<uint16_t>(ReadBigEndian(header.substr(2, 2)));
  if (version != kVersion) return Malformed("control", absl::StrCat("version ", version));
  // Unknown types are dropped as they arrive, so only known ones count against the limit.
  const bool known = IsKnownControlType(control_type_);
  if (known && remaining_ > limits_.max_control_payload) {
    return Malformed("control", absl::StrCat("length ", remaining_, ", more than ", limits_.max_control_payload));
  }
  phase_ = known ? Phase::kControl : Phase::kSkip;
  control_.clear();
  return remaining_ == 0 ? FinishControl(handler) : absl::OkStatus();
}

absl::Status FrameParser::ReadPayload(std::string_view& bytes, Handler& handler) {
  const std::size_t take = std::min(remaining_, bytes.size());
  const std::string_view piece = bytes.substr(0, take);
  bytes.remove_prefix(take);
  remaining_ -= take;
  if (phase_ == Phase::kData) {
    if (remaining_ == 0) phase_ = Phase::kHeader;
    handler.OnData(data_stream_, piece, remaining_ == 0 && (frame_flags_ & kFlagFin));
    return absl::OkStatus();
  }
  if (phase_ == Phase::kControl) control_.append(piece);
  return remaining_ == 0 ? FinishControl(handler) : absl::OkStatus();
}

absl::Status FrameParser::FinishControl(Handler& handler) {
  phase_ = Phase::kHeader;
  return ParseControl(control_type_, frame_flags_, control_, handler);
}

absl::Status FrameParser::ParseControl(uint16_t type, uint8_t flags, std::string_view payload, Handler& handler) {
  absl::StatusOr<ControlFrame> frame = ParseControlPayload(type, flags, payload, decompressor_);
  if (!frame.ok()) return frame.status();
  handler.OnControl(*std::move(frame));
  return absl::OkStatus();
}

std::string FrameWriter::SynStream(const spdy::SynStream& frame) {
  std::string payload;
  AppendBigEndian(payload, frame.stream_id & kMaxStreamId, 4);
  AppendBigEndian(payload, frame.associated_to & kMaxStreamId, 4);
  AppendBigEndian(payload, (frame.priority & 0x7) << 5, 1);
  AppendBigEndian(payload, frame.slot, 1);
  payload.append(compressor_.Compress(frame.headers));
  return ControlFrameBytes(ControlType::kSynStream, frame.flags, payload);
}

std::string FrameWriter::SynReply(uint32_t stream_id, uint8_t flags, const spdy::Headers& headers) {
  return StreamHeadersFrame(ControlType::kSynReply, stream_id, flags, compressor_.Compress(headers));
}

std::string FrameWriter::Headers(uint32_t stream_id, uint8_t flags, const spdy::Headers& headers) {
  return StreamHeadersFrame(ControlType::kHeaders, stream_id, flags, compressor_.Compress(headers));
}

std::string FrameWriter::RstStream(uint32_t stream_id, RstStatus status) {
  return ControlFrameBytes(ControlType::kRstStream, 0, StreamIdAndWord(stream_id, static_cast<uint32_t>(status)));
}

std::string FrameWriter::Settings(const spdy::Settings& frame) {
  std::string payload;
  AppendBigEndian(payload, static_cast<uint32_t>(frame.entries.size()), 4);
  for (const SettingsEntry& entry : frame.entries) {
    AppendBigEndian(payload, (uint32_t{entry.flags} << 24) | (entry.id & 0xffffff), 4);
    AppendBigEndian(payload, entry.value, 4);
  }
  return ControlFrameBytes(ControlType::kSettings, frame.flags, payload);
}

std::string FrameWriter::Ping(uint32_t id) {
  std::string payload;
  AppendBigEndian(payload, id, 4);
  return ControlFrameBytes(ControlType::kPing, 0, payload);
}

std::string FrameWriter::GoAway(uint32_t last_good_stream_id, GoAwayStatus status) {
  return ControlFrameBytes(ControlType::kGoAway, 0,
                           StreamIdAndWord(last_good_stream_id, static_cast<uint32_t>(status)));
}

std::string FrameWriter::WindowUpdate(uint32_t stream_id, uint32_t delta) {
  return ControlFrameBytes(ControlType::kWindowUpdate, 0, StreamIdAndWord(stream_id, delta & kMaxStreamId));
}

std::array<uint8_t, kFrameHeaderSize> FrameWriter::DataHeader(uint32_t stream_id, uint8_t flags, uint32_t length) {
  std::string bytes;
  AppendBigEndian(bytes, stream_id & kMaxStreamId, 4);
  AppendBigEndian(bytes, flags, 1);
  AppendBigEndian(bytes, length, 3);
  std::array<uint8_t, kFrameHeaderSize> header{};
  std::copy(bytes.begin(), bytes.end(), header.begin());
  return header;
}

}  // namespace streaming::spdy
