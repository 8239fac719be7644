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
      continue;
    }
    const std::size_t take = std::min<std::size_t>(remaining_, data.size());
    sink_(stream_, data.substr(0, take));
    remaining_ -= static_cast<uint32_t>(take);
    data.remove_prefix(take);
  }
  return !broken_;
}

}  // namespace dockerclient
