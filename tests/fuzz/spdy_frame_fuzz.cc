// FrameParser on arbitrary bytes. The first 4 input bytes choose the piece sizes in
// which the rest is fed; a second parser takes it whole, and both must report the same
// frames and the same outcome. Every control frame parsed is then written by a
// FrameWriter and re-parsed by a fresh parser (one pair for the whole input, so the
// header compression context carries over); writing the re-parsed frame again must
// give the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "streaming/spdy/frame.h"

namespace {

namespace spdy = streaming::spdy;

void Check(bool condition) {
  if (!condition) std::abort();
}

// The frame's bytes as `writer` serializes it; unknown types have none.
std::string Write(spdy::FrameWriter& writer, const spdy::ControlFrame& frame) {
  struct Visitor {
    spdy::FrameWriter& writer;
    std::string operator()(const spdy::SynStream& f) { return writer.SynStream(f); }
    std::string operator()(const spdy::SynReply& f) { return writer.SynReply(f.stream_id, f.flags, f.headers); }
    std::string operator()(const spdy::HeadersFrame& f) { return writer.Headers(f.stream_id, f.flags, f.headers); }
    std::string operator()(const spdy::RstStream& f) {
      return spdy::FrameWriter::RstStream(f.stream_id, static_cast<spdy::RstStatus>(f.status));
    }
    std::string operator()(const spdy::Settings& f) { return spdy::FrameWriter::Settings(f); }
    std::string operator()(const spdy::Ping& f) { return spdy::FrameWriter::Ping(f.id); }
    std::string operator()(const spdy::GoAway& f) {
      return spdy::FrameWriter::GoAway(f.last_good_stream_id, static_cast<spdy::GoAwayStatus>(f.status));
    }
    std::string operator()(const spdy::WindowUpdate& f) {
      return spdy::FrameWriter::WindowUpdate(f.stream_id, f.delta);
    }
    std::string operator()(const spdy::UnknownControl&) { return {}; }
  };
  return std::visit(Visitor{writer}, frame);
}

// What a parser reported, independent of how its input was split: control frames in
// their serialized form, consecutive data pieces of one stream merged.
struct Transcript : spdy::FrameParser::Handler {
  spdy::FrameWriter writer;
  std::vector<std::string> events;
  std::vector<spdy::ControlFrame> controls;
  bool in_data = false;

  void OnControl(spdy::ControlFrame frame) override {
    const auto* unknown = std::get_if<spdy::UnknownControl>(&frame);
    events.push_back(unknown != nullptr ? "U" + std::to_string(unknown->type) : "C" + Write(writer, frame));
    controls.push_back(std::move(frame));
    in_data = false;
  }
  void OnData(uint32_t stream_id, std::string_view piece, bool fin) override {
    const std::string prefix = "D" + std::to_string(stream_id) + ":";
    if (!in_data || !events.back().starts_with(prefix)) events.push_back(prefix);
    events.back().append(piece);
    in_data = !fin;
    if (fin) events.push_back("F" + std::to_string(stream_id));
  }
};

absl::Status FeedInPieces(std::string_view bytes, const uint8_t sizes[4], spdy::FrameParser& parser,
                          Transcript& transcript) {
  absl::Status status;
  for (std::size_t i = 0; status.ok() && !bytes.empty(); ++i) {
    // A size byte of 0 feeds everything left.
    const std::size_t size = sizes[i % 4] == 0 ? bytes.size() : sizes[i % 4];
    const std::string_view piece = bytes.substr(0, size);
    bytes.remove_prefix(piece.size());
    status = parser.Feed(piece, transcript);
  }
  return status;
}

void CheckRoundTrip(const std::vector<spdy::ControlFrame>& frames) {
  spdy::FrameWriter first_writer, second_writer;
  spdy::FrameParser parser;
  for (const spdy::ControlFrame& frame : frames) {
    if (std::holds_alternative<spdy::UnknownControl>(frame)) continue;
    const std::string bytes = Write(first_writer, frame);
    Transcript reparsed;
    Check(parser.Feed(bytes, reparsed).ok());
    Check(parser.AtFrameBoundary() && reparsed.controls.size() == 1);
    Check(Write(second_writer, reparsed.controls.front()) == bytes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 4, size - 4);

  spdy::FrameParser whole_parser;
  Transcript whole;
  const absl::Status whole_status = whole_parser.Feed(bytes, whole);

  spdy::FrameParser split_parser;
  Transcript split;
  const absl::Status split_status = FeedInPieces(bytes, data, split_parser, split);

  Check(whole_status.code() == split_status.code());
  Check(whole_status.ok() || whole_status.code() == absl::StatusCode::kInvalidArgument);
  Check(whole.events == split.events);
  Check(!whole_status.ok() || whole_parser.AtFrameBoundary() == split_parser.AtFrameBoundary());
  CheckRoundTrip(whole.controls);
  return 0;
}
