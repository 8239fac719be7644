// WebSocket channel framing, subprotocol negotiation and the resize decoder on
// arbitrary bytes: no crash, no sanitizer report, and the invariants below.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "streaming/remotecommand/protocol.h"
#include "streaming/websocket/channel.h"

namespace {

using streaming::TerminalSize;
using streaming::remotecommand::ResizeDecoder;
namespace ws = streaming::websocket;

void Require(bool condition) {
  if (!condition) std::abort();
}

void CheckMessage(ws::Encoding encoding, std::string_view input) {
  const absl::StatusOr<std::optional<ws::Message>> decoded = ws::DecodeMessage(encoding, input);
  if (!decoded.ok() || !decoded->has_value()) return;
  const ws::Message& message = **decoded;
  const std::string encoded = ws::EncodeMessage(encoding, message.channel, message.payload);
  // Binary framing is the identity; base64 may normalise padding or whitespace.
  if (encoding == ws::Encoding::kBinary) Require(encoded == input);
  const absl::StatusOr<std::optional<ws::Message>> again = ws::DecodeMessage(encoding, encoded);
  Require(again.ok() && again->has_value());
  Require((*again)->channel == message.channel && (*again)->payload == message.payload);

  if (message.channel != ws::kCloseSignal) return;
  const absl::StatusOr<uint8_t> closed = ws::CloseSignalChannel(message);
  if (closed.ok() && encoding == ws::Encoding::kBinary) Require(ws::EncodeCloseSignal(*closed) == input);
}

// A chosen subprotocol is one of the offered entries (or "" for the legacy one).
void CheckNegotiation(const std::optional<ws::Subprotocol>& chosen, std::string_view offered) {
  if (chosen.has_value()) Require(offered.find(chosen->name) != std::string_view::npos);
}

// Feeding in pieces must give what one feed of the whole stream gives.
void CheckResize(std::string_view input) {
  if (input.empty()) return;
  const std::size_t piece = 1 + static_cast<uint8_t>(input[0]) % 16;

  ResizeDecoder whole;
  std::vector<TerminalSize> whole_sizes;
  const bool whole_ok = whole.Feed(input, whole_sizes).ok();

  ResizeDecoder pieces;
  std::vector<TerminalSize> piece_sizes;
  absl::Status status;
  for (std::size_t at = 0; at < input.size() && status.ok(); at += piece) {
    status = pieces.Feed(input.substr(at, piece), piece_sizes);
  }
  Require(status.ok() == whole_ok && piece_sizes == whole_sizes);
  if (!status.ok()) Require(pieces.Feed("{}", piece_sizes) == status && piece_sizes == whole_sizes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckMessage(ws::Encoding::kBinary, input);
  CheckMessage(ws::Encoding::kBase64, input);
  CheckNegotiation(ws::NegotiateRemoteCommand(input), input);
  CheckNegotiation(ws::NegotiatePortForward(input), input);
  CheckResize(input);
  return 0;
}
