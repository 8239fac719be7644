#pragma once
// The Kubernetes channel protocols over WebSocket (k8s.io/apimachinery wsstream):
// every message belongs to a channel named by its first byte. Binary subprotocols
// send [channel][payload] as binary messages; base64 ones send a text message
// '0'+channel followed by the payload in standard base64. v5.channel.k8s.io adds a
// close signal, the binary message [0xFF, channel], that half-closes a channel.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace streaming::websocket {

enum class Encoding { kBinary, kBase64 };

// What the server answered in Sec-WebSocket-Protocol and what it means.
struct Subprotocol {
  enum class Kind {
    kChannels,    // channel framing as above
    kSpdyTunnel,  // SPDY/3.1 frames inside binary messages (port-forward only)
  };
  std::string name;  // echoed to the client; "" when the client offered none
  Kind kind = Kind::kChannels;
  Encoding encoding = Encoding::kBinary;
  // remotecommand semantics: 1 (text error status, no stdin close), 4 (JSON status),
  // 5 (JSON status and close signal). Port-forward channel protocols report 4.
  int version = 1;
};

// Picks the first subprotocol the client offered (the Sec-WebSocket-Protocol value:
// a comma-separated list, in the client's order, entries trimmed of spaces) that the
// server speaks; nullopt when none is. An empty or absent offer selects the legacy
// binary channel protocol with name "".
// exec/attach: "channel.k8s.io", "base64.channel.k8s.io" (v1), "v4.channel.k8s.io",
// "v4.base64.channel.k8s.io" (v4), "v5.channel.k8s.io" (v5, binary only).
std::optional<Subprotocol> NegotiateRemoteCommand(std::string_view offered);
// port-forward: "v4.channel.k8s.io", "v4.base64.channel.k8s.io" (the upstream CRI
// server's list), "portforward.k8s.io", "base64.portforward.k8s.io" (the same channel
// framing under the protocol's own name), and "SPDY/3.1+portforward.k8s.io" (the
// tunnel kubectl 1.31+ uses).
std::optional<Subprotocol> NegotiatePortForward(std::string_view offered);

// One message for `channel`: the bytes of a binary message, or of a text message
// for kBase64.
std::string EncodeMessage(Encoding encoding, uint8_t channel, std::string_view payload);

struct Message {
  uint8_t channel = 0;
  std::string payload;
};
// Decodes a received message, text or binary alike. nullopt for an empty message
// (which carries nothing); INVALID_ARGUMENT when a base64 payload does not decode.
absl::StatusOr<std::optional<Message>> DecodeMessage(Encoding encoding, std::string_view data);

inline constexpr uint8_t kCloseSignal = 0xFF;
// The v5 close signal for `channel`: {0xFF, channel}.
std::string EncodeCloseSignal(uint8_t channel);
// The channel a decoded v5 close signal closes; INVALID_ARGUMENT unless its payload
// is exactly one byte (the peer's protocol error ends the connection).
absl::StatusOr<uint8_t> CloseSignalChannel(const Message& message);

// Port-forward: the first message on each channel of port index i (data 2i, error
// 2i+1) is the port as a little-endian uint16.
std::string EncodePortPrefix(uint16_t port);

}  // namespace streaming::websocket
