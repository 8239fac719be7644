#include "dockerclient/stdcopy.h"

#include <algorithm>

namespace dockerclient {

bool StdDemuxer::Feed(std::string_view data) {
  while (!broken_ && !data.empty()) {
    if (remaining_ == 0) {
      const std::size_t take = std::min<std::size_t>(8 - header_fill_, data.size());
      std::copy_n(data.data(), take, header_ + header_fill_);
      header_fill_ += static_cast<int>(take);
      data.remove_prefix(take);
      if (header_fill_ < 8) break;
      header_fill_ = 0;
      if (header_[0] > static_cast<uint8_t>(StdStream::kSystemErr)) {
        broken_ = true;
        break;
      }
      stream_ = static_cast<StdStream>(header_[0]);
      remaining_ = (uint32_t{header_[4]} << 24) | (uint32_t{header_[5]} << 16) | (uint32_t{header_[6]} << 8) |
                   uint32_t{header_[7]};
      if (remaining_ == 0 && on_frame_end_) on_frame_end_();
      continue;
    }
    const std::size_t take = std::min<std::size_t>(remaining_, data.size());
    sink_(stream_, data.substr(0, take));
    remaining_ -= static_cast<uint32_t>(take);
    data.remove_prefix(take);
    if (remaining_ == 0 && on_frame_end_) on_frame_end_();
  }
  return !broken_;
}

StdFrameReader::StdFrameReader(Sink sink, std::size_t max_frame)
    : sink_(std::move(sink)),
      max_frame_(max_frame),
      demuxer_([this](StdStream stream, std::string_view piece) { OnPiece(stream, piece); }, [this] { OnFrameEnd(); }) {}

bool StdFrameReader::Feed(std::string_view data) { return demuxer_.Feed(data); }

void StdFrameReader::OnPiece(StdStream stream, std::string_view piece) {
  stream_ = stream;
  while (!piece.empty()) {
    const std::size_t take = std::min(max_frame_ - frame_.size(), piece.size());
    frame_.append(piece.substr(0, take));
    piece.remove_prefix(take);
    if (frame_.size() == max_frame_) {
      sink_(stream_, frame_);
      frame_.clear();
    }
  }
}

void StdFrameReader::OnFrameEnd() {
  if (frame_.empty()) return;
  sink_(stream_, frame_);
  frame_.clear();
}

}  // namespace dockerclient
