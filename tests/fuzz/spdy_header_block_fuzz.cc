// Header blocks on arbitrary bytes.
// - DecodeHeaderBlock takes the input as an uncompressed block. What it accepts must
//   encode to a block of the same size (only the case of names may change) that
//   decodes to the same pairs, and FindHeader must find the first pair's first value.
// - HeaderDecompressor takes the input as the compressed blocks of one direction, cut
//   where the first byte says, once behind the SPDY/3 zlib header (zlib is not
//   instrumented, so the fuzzer could hardly find its DICTID) and once as is. Every
//   block it accepts must survive a round trip through one HeaderCompressor and a
//   fresh HeaderDecompressor, the context carried along.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "streaming/spdy/header_block.h"

namespace {

namespace spdy = streaming::spdy;

constexpr std::string_view kZlibHeader = "\x78\xf9\xe3\xc6\xa7\xc2";

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckUncompressed(std::string_view block) {
  const absl::StatusOr<spdy::Headers> headers = spdy::DecodeHeaderBlock(block);
  if (!headers.ok()) return;
  const std::string encoded = spdy::EncodeHeaderBlock(*headers);
  Check(encoded.size() == block.size());
  const absl::StatusOr<spdy::Headers> decoded = spdy::DecodeHeaderBlock(encoded);
  Check(decoded.ok() && *decoded == *headers);
  if (headers->empty()) return;
  const auto& [name, value] = headers->front();
  Check(spdy::FindHeader(*headers, name) == std::string_view(value).substr(0, value.find('\0')));
}

// Decompresses `stream` cut every `block_size` bytes, the first block behind `prefix`.
void CheckCompressed(std::string_view prefix, std::string_view stream, std::size_t block_size) {
  spdy::HeaderDecompressor decompressor;
  spdy::HeaderCompressor compressor;
  spdy::HeaderDecompressor round_trip;
  std::string block(prefix);
  do {
    block.append(stream.substr(0, block_size));
    stream.remove_prefix(std::min(block_size, stream.size()));
    const absl::StatusOr<spdy::Headers> headers = decompressor.Decompress(block);
    if (!headers.ok()) {
      Check(!decompressor.Decompress(block).ok());  // once failed, failing for good
      return;
    }
    const absl::StatusOr<spdy::Headers> again = round_trip.Decompress(compressor.Compress(*headers));
    Check(again.ok() && *again == *headers);
    block.clear();
  } while (!stream.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  CheckUncompressed(input);
  if (size == 0) return 0;
  // A first byte of 0 makes the whole rest one block.
  const std::size_t block_size = data[0] == 0 ? size : data[0];
  CheckCompressed(kZlibHeader, input.substr(1), block_size);
  CheckCompressed({}, input, size);
  return 0;
}
