// Docker's multiplexed stream (stdcopy) on arbitrary bytes, fed in pieces whose sizes
// the input picks. The input's first byte is the StdFrameReader's max_frame (1..256),
// the next two seed the piece sizes, the rest is the stream.
// - StdDemuxer hands over exactly the frames a one-pass reading of the whole stream
//   finds (the last one possibly cut short), stops at the first header naming no
//   stream, and says whether the stream ended between frames.
// - StdFrameReader hands over each frame in max_frame pieces, the last one whole once
//   the frame ended, and nothing of a frame cut short but its full pieces.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dockerclient/stdcopy.h"

namespace {

using dockerclient::StdStream;
using Frames = std::vector<std::pair<StdStream, std::string>>;

void Check(bool condition) {
  if (!condition) std::abort();
}

struct Reference {
  Frames frames;        // non-empty payloads, in order; the last may be cut short
  bool last_cut = false;
  bool broken = false;  // a header named no stream
  bool at_boundary = true;
};

Reference ReadWhole(std::string_view s) {
  Reference r;
  while (!s.empty()) {
    if (s.size() < 8) {
      r.at_boundary = false;
      break;
    }
    const auto* h = reinterpret_cast<const unsigned char*>(s.data());
    if (h[0] > 3) {
      r.broken = true;
      break;
    }
    const uint32_t size = uint32_t{h[4]} << 24 | uint32_t{h[5]} << 16 | uint32_t{h[6]} << 8 | h[7];
    s.remove_prefix(8);
    const std::size_t got = std::min<std::size_t>(size, s.size());
    if (got > 0) r.frames.emplace_back(static_cast<StdStream>(h[0]), std::string(s.substr(0, got)));
    s.remove_prefix(got);
    if (got < size) {
      r.last_cut = got > 0;
      r.at_boundary = false;
      break;
    }
  }
  return r;
}

// Piece sizes from a tiny LCG: mostly small, sometimes large.
template <typename FeedFn>
bool FeedInPieces(std::string_view s, uint32_t seed, FeedFn feed) {
  bool ok = true;
  while (!s.empty()) {
    seed = seed * 1103515245u + 12345u;
    const std::size_t n = std::min<std::size_t>(s.size(), (seed >> 16) % 4 == 0 ? (seed >> 8) % 4096 + 1 : (seed >> 8) % 13 + 1);
    ok = feed(s.substr(0, n)) && ok;
    s.remove_prefix(n);
  }
  return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const std::size_t max_frame = std::size_t{data[0]} + 1;
  const uint32_t seed = uint32_t{data[1]} << 8 | data[2];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 3, size - 3);
  const Reference ref = ReadWhole(stream);

  Frames seen;
  bool open = false;  // the last frame in `seen` is still being delivered
  dockerclient::StdDemuxer demuxer(
      [&](StdStream s, std::string_view piece) {
        Check(!piece.empty());
        if (!open) seen.emplace_back(s, "");
        Check(seen.back().first == s);
        seen.back().second.append(piece);
        open = true;
      },
      [&] { open = false; });
  const bool ok = FeedInPieces(stream, seed, [&](std::string_view piece) { return demuxer.Feed(piece); });
  Check(ok == !ref.broken);
  Check(seen == ref.frames);
  Check(demuxer.AtFrameBoundary() == (ref.broken || ref.at_boundary));

  Frames expected;
  for (std::size_t i = 0; i < ref.frames.size(); ++i) {
    const auto& [s, payload] = ref.frames[i];
    const bool cut = ref.last_cut && i + 1 == ref.frames.size();
    for (std::size_t at = 0; at < payload.size(); at += max_frame) {
      const std::string piece = payload.substr(at, max_frame);
      if (cut && piece.size() < max_frame) break;
      expected.emplace_back(s, piece);
    }
  }
  Frames read;
  dockerclient::StdFrameReader reader([&](StdStream s, std::string_view frame) { read.emplace_back(s, std::string(frame)); },
                                      max_frame);
  Check(FeedInPieces(stream, seed ^ 0x5a5a, [&](std::string_view piece) { return reader.Feed(piece); }) == !ref.broken);
  Check(read == expected);
  return 0;
}
