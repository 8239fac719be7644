#pragma once
// The remotecommand protocol pieces that do not depend on the transport:
// protocol names and negotiation, the status written on the error stream, and the
// terminal-size events read from the resize stream.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "streaming/runtime.h"

namespace streaming::remotecommand {

// v1 "channel.k8s.io"; v2 "v2.channel.k8s.io"; v3 adds resize; v4 writes a JSON
// status with the exit code; v5 (WebSocket only) adds the stdin close signal.
enum class Version { kV1 = 1, kV2 = 2, kV3 = 3, kV4 = 4, kV5 = 5 };

inline constexpr std::string_view kPortForwardProtocol = "portforward.k8s.io";
// What the server speaks over SPDY, in its order of preference.
inline constexpr std::string_view kSpdyRemoteCommandProtocols[] = {
    "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"};

// The first protocol the client offered that the server supports. `offered` holds
// the X-Stream-Protocol-Version header lines in order; each may be a comma-separated
// list whose entries are trimmed of spaces. nullopt when there is no match.
std::optional<std::string> NegotiateProtocol(const std::vector<std::string>& offered,
                                             const std::vector<std::string_view>& supported);
// The version a protocol name stands for; nullopt for other names.
std::optional<Version> VersionOf(std::string_view protocol);

// metav1.Status JSON as the Go server writes it (v4 and v5), byte for byte:
//   {"metadata":{},"status":"Success"}
std::string SuccessStatus();
//   {"metadata":{},"status":"Failure","message":"command terminated with non-zero exit
//   code: <error>","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode",
//   "message":"<exit_code>"}]}}
// `exit_code` must be 1..255 (client-go parses it as uint8).
std::string ExitCodeStatus(int exit_code, std::string_view error);
//   {"metadata":{},"status":"Failure","message":"Internal error occurred: <message>",
//   "reason":"InternalError","details":{"causes":[{"message":"<message>"}]},"code":500}
std::string InternalErrorStatus(std::string_view message);

// Decodes the resize stream: JSON objects such as {"Width":80,"Height":24}, back to
// back or newline-separated, split across frames in any way; keys match
// case-insensitively (Go's decoder), missing ones are 0.
class ResizeDecoder {
 public:
  // Appends each size completed by `bytes` to `out`. INVALID_ARGUMENT on anything
  // that is not such an object, or one longer than 4 KiB; the caller then stops
  // reading resizes, as the Go server does.
  absl::Status Feed(std::string_view bytes, std::vector<TerminalSize>& out);

 private:
  absl::Status Scan(std::string_view bytes, std::vector<TerminalSize>& out);
  // Tracks strings and nesting; true when `c` ends the object in pending_.
  bool ClosesObject(char c);

  std::string pending_;  // the object read so far
  int depth_ = 0;
  bool in_string_ = false, escaped_ = false;
  absl::Status error_;  // the first error, returned by every later Feed
};

}  // namespace streaming::remotecommand
