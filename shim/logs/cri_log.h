#pragma once
// The CRI container log format that the kubelet, `kubectl logs` and critest read at a
// container's log path (k8s.io/cri-client/pkg/logs):
//   <RFC 3339 timestamp with nanoseconds> <stdout|stderr> <F|P> <content>\n
// F ends a line the container wrote; P is a piece of a longer one (containerd cuts
// lines at 16 KiB, its max_container_log_line_size default, as Docker's own log
// copier does; the kubelet joins the pieces). The shim builds these lines from
// Docker's log stream (GET /containers/{id}/logs with timestamps), where each message
// is "<RFC 3339 timestamp> <content>" and a message without a final '\n' is a partial
// line that the next message continues.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace shim::logs {

enum class LogStream { kStdout, kStderr };

inline constexpr std::size_t kMaxLineBytes = 16 * 1024;

// Splits one Docker log message into its timestamp and content. INVALID_ARGUMENT
// when it does not start with an RFC 3339 timestamp followed by a space.
struct DockerLogMessage {
  std::string_view timestamp;  // as Docker wrote it, e.g. "2026-12-01T11:22:30.123456789Z"
  std::string_view content;    // with its '\n' when the line ends here
};
absl::StatusOr<DockerLogMessage> ParseDockerLogMessage(std::string_view message);

// Appends the CRI lines for one message to `out`: content ending in '\n' gives F
// lines (the '\n' not repeated inside), content without gives P; content longer than
// `max_line` bytes is cut into P pieces first, at exactly `max_line` bytes even inside
// a UTF-8 sequence, as containerd cuts (0: no limit). Only '\n' ends a line ('\r' stays
// content), wherever it is. The timestamp is copied as given. An empty message (no
// content, no '\n') gives nothing.
void AppendCriLines(LogStream stream, std::string_view timestamp, std::string_view content, std::string& out,
                    std::size_t max_line = kMaxLineBytes);

// Docker's timestamps ("2026-12-01T11:22:30.123456789Z", also with fewer fraction
// digits or a numeric offset) as nanoseconds since the epoch, to order and compare
// them; INVALID_ARGUMENT otherwise, also outside what int64 nanoseconds hold (1970 to
// 2262-04-11).
absl::StatusOr<int64_t> TimestampNanos(std::string_view timestamp);
// The `since` query value for Docker's logs API: "<seconds>.<nanoseconds>" (9 digits).
std::string SinceParameter(int64_t nanos);

// Where copying resumes after a restart, from the file's tail: the timestamp of the
// last complete line, how many complete lines at its end carry exactly that timestamp,
// and the length of the file up to its last '\n' (an interrupted write leaves a
// partial line, which is cut before appending). Docker's `since` includes messages at
// that instant, so they come again: the first `lines_at_last` CRI lines made from
// them are already in the file and are skipped (a long message's pieces share one
// timestamp, so this counts lines, not messages).
struct ResumePoint {
  int64_t last_nanos = 0;  // 0: nothing written yet, copy from the start
  int lines_at_last = 0;
  uint64_t valid_length = 0;
};
// Reads only the tail of the file as needed. A missing file is an empty one.
absl::StatusOr<ResumePoint> FindResumePoint(const std::string& path);

}  // namespace shim::logs
