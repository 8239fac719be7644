#include "streaming/spdy/header_block.h"

#define ZLIB_CONST  // next_in is const: zlib does not write to its input
#include <zlib.h>

#include <algorithm>
#include <array>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace streaming::spdy {
namespace {

// SPDY draft 3, section 2.6.10.1: 65 length-prefixed words, then plain text.
constexpr std::array<std::string_view, 65> kDictionaryWords = {
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location",
    "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified",
    "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
    "warning", "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
    "public", "set-cookie", "keep-alive", "origin",
};
constexpr std::string_view kDictionaryText =
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

void AppendString(std::string& out, std::string_view s) {
  AppendBigEndian(out, static_cast<uint32_t>(s.size()), 4);
  out.append(s);
}

std::string BuildDictionary() {
  std::string dictionary;
  for (std::string_view word : kDictionaryWords) AppendString(dictionary, word);
  dictionary.append(kDictionaryText);
  return dictionary;
}

// Reads the length-prefixed fields of an uncompressed block front to back.
class BlockReader {
 public:
  explicit BlockReader(std::string_view block) : rest_(block) {}

  bool ReadU32(uint32_t& value) {
    if (rest_.size() < 4) return false;
    value = ReadBigEndian(rest_.substr(0, 4));
    rest_.remove_prefix(4);
    return true;
  }
  bool ReadString(std::string_view& s) {
    uint32_t length = 0;
    if (!ReadU32(length) || rest_.size() < length) return false;
    s = rest_.substr(0, length);
    rest_.remove_prefix(length);
    return true;
  }
  std::size_t remaining() const { return rest_.size(); }

 private:
  std::string_view rest_;
};

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed SPDY header block: ", common::Av(what)));
}

// Inflated bytes are produced in chunks of at least this size.
constexpr std::size_t kMinInflateChunk = 1024;

}  // namespace

void AppendBigEndian(std::string& out, uint32_t value, std::size_t bytes) {
  for (std::size_t i = bytes; i-- > 0;) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint32_t ReadBigEndian(std::string_view bytes) {
  uint32_t value = 0;
  for (char c : bytes) value = (value << 8) | static_cast<uint8_t>(c);
  return value;
}

std::optional<std::string_view> FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(common::Av(key), common::Av(name))) {
      const std::string_view joined = value;
      return joined.substr(0, joined.find('\0'));
    }
  }
  return std::nullopt;
}

std::string_view Spdy3Dictionary() {
  static const std::string dictionary = BuildDictionary();
  return dictionary;
}

std::string EncodeHeaderBlock(const Headers& headers) {
  std::string block;
  AppendBigEndian(block, static_cast<uint32_t>(headers.size()), 4);
  for (const auto& [name, value] : headers) {
    AppendString(block, absl::AsciiStrToLower(common::Av(name)));
    AppendString(block, value);
  }
  return block;
}

absl::StatusOr<Headers> DecodeHeaderBlock(std::string_view block, const HeaderBlockLimits& limits) {
  BlockReader reader(block);
  uint32_t count = 0;
  if (!reader.ReadU32(count)) return Malformed("truncated pair count");
  if (count > limits.max_pairs) return Malformed(absl::StrCat(count, " pairs, more than ", limits.max_pairs));
  Headers headers;
  // Each pair takes at least 8 bytes, so a lying count cannot make this reserve large.
  headers.reserve(std::min<std::size_t>(count, reader.remaining() / 8));
  for (uint32_t i = 0; i < count; ++i) {
    std::string_view name, value;
    if (!reader.ReadString(name) || !reader.ReadString(value)) return Malformed("truncated pair");
    if (name.empty()) return Malformed("empty header name");
    headers.emplace_back(absl::AsciiStrToLower(common::Av(name)), std::string(value));
  }
  if (reader.remaining() != 0) return Malformed("trailing bytes after the last pair");
  return headers;
}

struct HeaderCompressor::State {
  z_stream zs{};
  ~State() { deflateEnd(&zs); }
};

HeaderCompressor::HeaderCompressor() : state_(std::make_unique<State>()) {
  // Level 9 as Go's zlib.BestCompression; windowBits 15 with the zlib wrapper, whose
  // header then announces the dictionary (78 F9, DICTID E3C6A7C2). Go's deflate never
  // emits 3-byte matches; Z_FILTERED drops short matches too, so that small blocks
  // come out as Go writes them (the captured empty block is four literal zeros).
  deflateInit2(&state_->zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15, 8, Z_FILTERED);
  const std::string_view dictionary = Spdy3Dictionary();
  deflateSetDictionary(&state_->zs, reinterpret_cast<const Bytef*>(dictionary.data()),
                       static_cast<uInt>(dictionary.size()));
}

HeaderCompressor::~HeaderCompressor() = default;

std::string HeaderCompressor::Compress(const Headers& headers) {
  const std::string block = EncodeHeaderBlock(headers);
  z_stream& zs = state_->zs;
  zs.next_in = reinterpret_cast<const Bytef*>(block.data());
  zs.avail_in = static_cast<uInt>(block.size());
  // deflateBound does not cover the flush marker; the loop grows the buffer if needed.
  std::string out(deflateBound(&zs, zs.avail_in) + 16, '\0');
  std::size_t produced = 0;
  while (true) {
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(out.size() - produced);
    deflate(&zs, Z_SYNC_FLUSH);
    produced = out.size() - zs.avail_out;
    // Z_SYNC_FLUSH is complete once deflate leaves output space unused.
    if (zs.avail_out != 0) break;
    out.resize(out.size() * 2);
  }
  out.resize(produced);
  return out;
}

struct HeaderDecompressor::State {
  z_stream zs{};
  HeaderBlockLimits limits;
  bool failed = false;
  ~State() { inflateEnd(&zs); }

  absl::StatusOr<std::string> Inflate(std::string_view compressed);
};

HeaderDecompressor::HeaderDecompressor(HeaderBlockLimits limits) : state_(std::make_unique<State>()) {
  state_->limits = limits;
  inflateInit(&state_->zs);
}

HeaderDecompressor::~HeaderDecompressor() = default;

absl::StatusOr<std::string> HeaderDecompressor::State::Inflate(std::string_view compressed) {
  zs.next_in = reinterpret_cast<const Bytef*>(compressed.data());
  zs.avail_in = static_cast<uInt>(compressed.size());
  // One byte more than the limit tells "exactly at the limit" from "beyond it".
  const std::size_t capacity = limits.max_decompressed_bytes + 1;
  std::string out;
  std::size_t produced = 0;
  while (true) {
    if (produced == out.size()) {
      if (out.size() == capacity) break;
      out.resize(std::min(capacity, std::max(kMinInflateChunk, 2 * out.size())));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(out.size() - produced);
    int rc = inflate(&zs, Z_SYNC_FLUSH);
    produced = out.size() - zs.avail_out;
    if (rc == Z_NEED_DICT) {
      const std::string_view dictionary = Spdy3Dictionary();
      rc = inflateSetDictionary(&zs, reinterpret_cast<const Bytef*>(dictionary.data()),
                                static_cast<uInt>(dictionary.size()));
      if (rc != Z_OK) return Malformed("compressed with another dictionary");
      continue;
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in != 0) return Malformed("bytes after the end of the zlib stream");
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return Malformed(absl::StrCat("zlib: ", zs.msg != nullptr ? zs.msg : "inflate failed"));
    }
    if (zs.avail_in == 0 && zs.avail_out != 0) break;  // all input inflated, all output flushed
    // Z_BUF_ERROR with both input and output space left: zlib cannot go on.
    if (rc == Z_BUF_ERROR) return Malformed("zlib made no progress");
  }
  if (produced > limits.max_decompressed_bytes) {
    return Malformed(absl::StrCat("inflates to more than ", limits.max_decompressed_bytes, " bytes"));
  }
  out.resize(produced);
  return out;
}

absl::StatusOr<Headers> HeaderDecompressor::Decompress(std::string_view compressed) {
  State& state = *state_;
  if (state.failed) return absl::FailedPreconditionError("SPDY header decompressor failed earlier");
  absl::StatusOr<std::string> block = state.Inflate(compressed);
  absl::StatusOr<Headers> headers = block.ok() ? DecodeHeaderBlock(*block, state.limits) : block.status();
  state.failed = !headers.ok();
  return headers;
}

}  // namespace streaming::spdy
