#pragma once
// SPDY/3 name/value header blocks: the uncompressed layout (32-bit count, then
// 32-bit length-prefixed names and values) and its zlib compression with the SPDY/3
// dictionary. Each direction of a connection keeps one compression context for all
// of its blocks (SYN_STREAM, SYN_REPLY, HEADERS), so a compressor or decompressor
// must see every block of its direction, in wire order.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace streaming::spdy {

// Pairs in wire order. Names are lower-case; several values of one name travel as
// one value joined by '\0'.
using Headers = std::vector<std::pair<std::string, std::string>>;

// The first value of `name` (matched case-insensitively) in `headers`: the part
// before any '\0'. nullopt when absent, which an empty value is not.
std::optional<std::string_view> FindHeader(const Headers& headers, std::string_view name);

// Big-endian integers of `bytes` (1..4) bytes, as every SPDY field is; shared by the
// header block and frame codecs.
void AppendBigEndian(std::string& out, uint32_t value, std::size_t bytes);
uint32_t ReadBigEndian(std::string_view bytes);

// The SPDY/3 compression dictionary (1423 bytes, Adler-32 0xE3C6A7C2).
std::string_view Spdy3Dictionary();

struct HeaderBlockLimits {
  std::size_t max_pairs = 1000;                // as spdystream v0.5.1
  std::size_t max_decompressed_bytes = 256 << 10;  // bounds memory for one block
};

// The uncompressed block for `headers`. Names are written lower-cased.
std::string EncodeHeaderBlock(const Headers& headers);
// Parses an uncompressed block that must end exactly at the end of `block`.
// INVALID_ARGUMENT on truncation, trailing bytes, empty names or too many pairs.
// Upper-case letters in names are lower-cased (the Go reader would refuse them;
// a server is lenient).
absl::StatusOr<Headers> DecodeHeaderBlock(std::string_view block, const HeaderBlockLimits& limits = {});

// Deflates successive blocks of one direction with the dictionary, each ended by a
// sync flush (00 00 FF FF) so the peer can inflate it at once.
class HeaderCompressor {
 public:
  HeaderCompressor();
  ~HeaderCompressor();
  HeaderCompressor(const HeaderCompressor&) = delete;
  HeaderCompressor& operator=(const HeaderCompressor&) = delete;

  std::string Compress(const Headers& headers);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Inflates successive blocks of one direction. Every block must inflate completely
// within its own bytes; after an error the decompressor is unusable (the
// connection's compression state is lost) and keeps failing.
class HeaderDecompressor {
 public:
  explicit HeaderDecompressor(HeaderBlockLimits limits = {});
  ~HeaderDecompressor();
  HeaderDecompressor(const HeaderDecompressor&) = delete;
  HeaderDecompressor& operator=(const HeaderDecompressor&) = delete;

  absl::StatusOr<Headers> Decompress(std::string_view compressed);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace streaming::spdy
