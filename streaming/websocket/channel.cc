#include "streaming/websocket/channel.h"

#include <algorithm>
#include <span>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "streaming/remotecommand/protocol.h"

namespace streaming::websocket {
namespace {

struct Offerable {
  std::string_view name;
  Subprotocol::Kind kind;
  Encoding encoding;
  int version;
};

using Kind = Subprotocol::Kind;

// The "" entries match an empty offer (and an empty entry in a list), as
// golang.org/x/net/websocket and wsstream do.
constexpr Offerable kRemoteCommand[] = {
    {"", Kind::kChannels, Encoding::kBinary, 1},
    {"channel.k8s.io", Kind::kChannels, Encoding::kBinary, 1},
    {"base64.channel.k8s.io", Kind::kChannels, Encoding::kBase64, 1},
    {"v4.channel.k8s.io", Kind::kChannels, Encoding::kBinary, 4},
    {"v4.base64.channel.k8s.io", Kind::kChannels, Encoding::kBase64, 4},
    {"v5.channel.k8s.io", Kind::kChannels, Encoding::kBinary, 5},
};

// The upstream CRI server's list (kubelet cri/streaming/portforward/websocket.go), the
// port-forward protocol's own name with its base64 form for clients that offer it
// over WebSocket (same channel framing), and the SPDY tunnel.
constexpr Offerable kPortForward[] = {
    {"", Kind::kChannels, Encoding::kBinary, 4},
    {"v4.channel.k8s.io", Kind::kChannels, Encoding::kBinary, 4},
    {"v4.base64.channel.k8s.io", Kind::kChannels, Encoding::kBase64, 4},
    {"portforward.k8s.io", Kind::kChannels, Encoding::kBinary, 4},
    {"base64.portforward.k8s.io", Kind::kChannels, Encoding::kBase64, 4},
    {"SPDY/3.1+portforward.k8s.io", Kind::kSpdyTunnel, Encoding::kBinary, 4},
};

std::optional<Subprotocol> Negotiate(std::string_view offered, std::span<const Offerable> table) {
  std::vector<std::string_view> names;
  for (const Offerable& entry : table) names.push_back(entry.name);
  const std::optional<std::string> chosen = remotecommand::NegotiateProtocol({std::string(offered)}, names);
  if (!chosen) return std::nullopt;
  const Offerable& entry = *std::ranges::find(table, *chosen, &Offerable::name);
  return Subprotocol{.name = *chosen, .kind = entry.kind, .encoding = entry.encoding, .version = entry.version};
}

// The first byte of a message names its channel; base64 protocols shift it by '0'
// (uint8 arithmetic, as in wsstream, so channels above 9 continue past '9').
uint8_t ChannelPrefix(Encoding encoding) { return encoding == Encoding::kBase64 ? '0' : 0; }

}  // namespace

std::optional<Subprotocol> NegotiateRemoteCommand(std::string_view offered) {
  return Negotiate(offered, kRemoteCommand);
}

std::optional<Subprotocol> NegotiatePortForward(std::string_view offered) { return Negotiate(offered, kPortForward); }

std::string EncodeMessage(Encoding encoding, uint8_t channel, std::string_view payload) {
  std::string out(1, static_cast<char>(static_cast<uint8_t>(channel + ChannelPrefix(encoding))));
  if (encoding == Encoding::kBase64) {
    out += absl::Base64Escape(common::Av(payload));
  } else {
    out += payload;
  }
  return out;
}

absl::StatusOr<std::optional<Message>> DecodeMessage(Encoding encoding, std::string_view data) {
  if (data.empty()) return std::nullopt;
  Message message;
  message.channel = static_cast<uint8_t>(static_cast<uint8_t>(data[0]) - ChannelPrefix(encoding));
  data.remove_prefix(1);
  if (encoding == Encoding::kBinary) {
    message.payload = std::string(data);
  } else if (!absl::Base64Unescape(common::Av(data), &message.payload)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid base64 payload on channel ", message.channel));
  }
  return message;
}

std::string EncodeCloseSignal(uint8_t channel) { return {static_cast<char>(kCloseSignal), static_cast<char>(channel)}; }

absl::StatusOr<uint8_t> CloseSignalChannel(const Message& message) {
  if (message.channel != kCloseSignal) {
    return absl::InvalidArgumentError(absl::StrCat("message on channel ", message.channel, " is not a close signal"));
  }
  if (message.payload.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("close signal carries ", message.payload.size(), " bytes, want one channel byte"));
  }
  return static_cast<uint8_t>(message.payload[0]);
}

std::string EncodePortPrefix(uint16_t port) { return {static_cast<char>(port & 0xff), static_cast<char>(port >> 8)}; }

}  // namespace streaming::websocket
