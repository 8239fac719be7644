#pragma once
// SPDY/3.1 framing (http://www.chromium.org/spdy/spdy-protocol/spdy-protocol-draft3,
// as moby/spdystream speaks it): an incremental parser that takes bytes in any
// pieces and a writer that serializes frames. Integers are big-endian; control
// frames have an 8-byte header {0x80 0x03, type u16, flags u8, length u24}, data
// frames {stream-id u31, flags u8, length u24}.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "streaming/spdy/header_block.h"

namespace streaming::spdy {

inline constexpr uint16_t kVersion = 3;
inline constexpr std::size_t kFrameHeaderSize = 8;
inline constexpr uint32_t kMaxStreamId = 0x7fffffff;
inline constexpr uint32_t kMaxDataLength = 0xffffff;

enum class ControlType : uint16_t {
  kSynStream = 1,
  kSynReply = 2,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoAway = 7,
  kHeaders = 8,
  kWindowUpdate = 9,
};

inline constexpr uint8_t kFlagFin = 0x01;             // data, SYN_STREAM, SYN_REPLY, HEADERS
inline constexpr uint8_t kFlagUnidirectional = 0x02;  // SYN_STREAM

enum class RstStatus : uint32_t {
  kProtocolError = 1,
  kInvalidStream = 2,
  kRefusedStream = 3,
  kUnsupportedVersion = 4,
  kCancel = 5,
  kInternalError = 6,
  kFlowControlError = 7,
  kStreamInUse = 8,
  kStreamAlreadyClosed = 9,
  kFrameTooLarge = 11,
};

enum class GoAwayStatus : uint32_t { kOk = 0, kProtocolError = 1, kInternalError = 2 };

struct SynStream {
  uint32_t stream_id = 0;
  uint32_t associated_to = 0;
  uint8_t priority = 0;  // 0..7
  uint8_t slot = 0;
  uint8_t flags = 0;
  Headers headers;
};
struct SynReply {
  uint32_t stream_id = 0;
  uint8_t flags = 0;
  Headers headers;
};
struct RstStream {
  uint32_t stream_id = 0;
  uint32_t status = 0;
};
struct SettingsEntry {
  uint8_t flags = 0;
  uint32_t id = 0;  // 24 bits
  uint32_t value = 0;
};
struct Settings {
  uint8_t flags = 0;
  std::vector<SettingsEntry> entries;
};
struct Ping {
  uint32_t id = 0;
};
struct GoAway {
  uint32_t last_good_stream_id = 0;
  uint32_t status = 0;
};
struct HeadersFrame {
  uint32_t stream_id = 0;
  uint8_t flags = 0;
  Headers headers;
};
struct WindowUpdate {
  uint32_t stream_id = 0;
  uint32_t delta = 0;
};
// A control frame of a type SPDY/3 does not define (or CREDENTIAL): skipped whole.
struct UnknownControl {
  uint16_t type = 0;
};

using ControlFrame =
    std::variant<SynStream, SynReply, RstStream, Settings, Ping, GoAway, HeadersFrame, WindowUpdate, UnknownControl>;

struct ParserLimits {
  // Control frames are buffered whole; a longer one is a protocol error. Unknown
  // types are dropped as they arrive, whatever their length.
  std::size_t max_control_payload = 1 << 20;
  HeaderBlockLimits header_block;
};

class FrameParser {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    virtual void OnControl(ControlFrame frame) = 0;
    // A piece of a data frame's payload, delivered as it arrives (never buffered).
    // `fin` is true on the last piece of a frame that carries FLAG_FIN; an empty
    // FIN frame gives one empty piece, an empty frame without FIN none.
    virtual void OnData(uint32_t stream_id, std::string_view piece, bool fin) = 0;
  };

  explicit FrameParser(ParserLimits limits = {});

  // Consumes all of `bytes`, calling `handler` for each frame or data piece
  // completed. INVALID_ARGUMENT on a malformed frame (wrong version, bad length of a
  // fixed-size frame, a stream id of 0 where one is required, RST status 0, PING id
  // 0, a header block that does not decompress or does not end at the frame's end,
  // an oversized control frame); after an error the parser must not be fed again.
  absl::Status Feed(std::string_view bytes, Handler& handler);

  // True when no frame is partly read.
  bool AtFrameBoundary() const;

 private:
  enum class Phase {
    kHeader,   // reading the 8-byte frame header
    kData,     // passing a data payload through
    kControl,  // buffering a control payload
    kSkip,     // dropping the payload of an unknown control type
  };

  absl::Status ReadHeader(std::string_view& bytes, Handler& handler);
  absl::Status StartData(std::string_view header, Handler& handler);
  absl::Status StartControl(std::string_view header, Handler& handler);
  absl::Status ReadPayload(std::string_view& bytes, Handler& handler);
  absl::Status FinishControl(Handler& handler);
  absl::Status ParseControl(uint16_t type, uint8_t flags, std::string_view payload, Handler& handler);

  ParserLimits limits_;
  HeaderDecompressor decompressor_;
  std::array<char, kFrameHeaderSize> header_{};
  std::size_t header_fill_ = 0;
  Phase phase_ = Phase::kHeader;
  uint32_t data_stream_ = 0;
  uint8_t frame_flags_ = 0;
  uint16_t control_type_ = 0;
  std::size_t remaining_ = 0;  // payload bytes still due
  std::string control_;        // control payload read so far
  bool failed_ = false;
};

// Serializes frames. Owns the outgoing header compressor, so frames carrying headers
// must go on the wire in the order they were serialized here.
class FrameWriter {
 public:
  std::string SynStream(const spdy::SynStream& frame);
  std::string SynReply(uint32_t stream_id, uint8_t flags, const spdy::Headers& headers);
  std::string Headers(uint32_t stream_id, uint8_t flags, const spdy::Headers& headers);
  static std::string RstStream(uint32_t stream_id, RstStatus status);
  static std::string Settings(const spdy::Settings& frame);
  static std::string Ping(uint32_t id);
  static std::string GoAway(uint32_t last_good_stream_id, GoAwayStatus status);
  static std::string WindowUpdate(uint32_t stream_id, uint32_t delta);
  // The 8-byte header of a data frame; the payload (up to kMaxDataLength) follows it
  // on the wire, so callers can send both without copying the payload.
  static std::array<uint8_t, kFrameHeaderSize> DataHeader(uint32_t stream_id, uint8_t flags, uint32_t length);

 private:
  HeaderCompressor compressor_;
};

}  // namespace streaming::spdy
