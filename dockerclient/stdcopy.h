#pragma once
// Docker's multiplexed stream format (exec/attach/logs without a TTY): frames of an
// 8-byte header {stream, 0, 0, 0, size as big-endian uint32} and `size` payload bytes.
// Stream 0 is stdin (never sent by dockerd), 1 stdout, 2 stderr, 3 a system error
// (e.g. "exec failed: ..."), which dockerd sends as the last frame.
#include <cstdint>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace dockerclient {

enum class StdStream : uint8_t { kStdin = 0, kStdout = 1, kStderr = 2, kSystemErr = 3 };

// Splits a multiplexed byte stream fed in arbitrary pieces into frames.
class StdDemuxer {
 public:
  using Sink = std::function<void(StdStream, std::string_view)>;
  // `on_frame_end`, when given, runs after the last piece of each frame.
  explicit StdDemuxer(Sink sink, std::function<void()> on_frame_end = nullptr)
      : sink_(std::move(sink)), on_frame_end_(std::move(on_frame_end)) {}

  // Delivers every complete payload piece in `data`. Returns false (and ignores the
  // rest of the stream) once a header names an unknown stream: the peer does not
  // speak this format.
  bool Feed(std::string_view data);
  // True when the stream ended between frames.
  bool AtFrameBoundary() const { return header_fill_ == 0 && remaining_ == 0; }

 private:
  Sink sink_;
  std::function<void()> on_frame_end_;
  unsigned char header_[8] = {};
  int header_fill_ = 0;
  uint32_t remaining_ = 0;  // payload bytes still due for the current frame
  StdStream stream_ = StdStream::kStdout;
  bool broken_ = false;
};

// Like StdDemuxer, but hands over whole frames: Docker's log stream writes one log
// message per frame, and a message must be seen whole to be parsed. A frame longer
// than `max_frame` comes in `max_frame` pieces (Docker's own messages stay far below).
class StdFrameReader {
 public:
  using Sink = std::function<void(StdStream, std::string_view)>;
  StdFrameReader(Sink sink, std::size_t max_frame);
  StdFrameReader(const StdFrameReader&) = delete;
  StdFrameReader& operator=(const StdFrameReader&) = delete;

  // False (and the rest ignored) once a header names an unknown stream.
  bool Feed(std::string_view data);

 private:
  void OnPiece(StdStream stream, std::string_view piece);
  void OnFrameEnd();

  Sink sink_;
  const std::size_t max_frame_;
  StdDemuxer demuxer_;
  std::string frame_;
  StdStream stream_ = StdStream::kStdout;
};

}  // namespace dockerclient
