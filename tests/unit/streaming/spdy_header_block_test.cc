#include "streaming/spdy/header_block.h"

#include <gtest/gtest.h>
#define ZLIB_CONST  // next_in is const: zlib does not write to its input
#include <zlib.h>

#include <string>
#include <string_view>

namespace streaming::spdy {
namespace {

using namespace std::string_literals;

// PROTOCOLS.md 1.3: the uncompressed block of the captured client SYN_STREAM.
const std::string kCapturedBlock =
    "\0\0\0\3"
    "\0\0\0\x0a" "streamtype" "\0\0\0\6" "stdout"
    "\0\0\0\x09" "requestid" "\0\0\0\1" "0"
    "\0\0\0\4" "port" "\0\0\0\2" "80"s;
const Headers kCapturedHeaders = {{"streamtype", "stdout"}, {"requestid", "0"}, {"port", "80"}};

// An oracle independent of HeaderDecompressor: zlib's inflate with the dictionary,
// over one or more sync-flushed blocks of the same stream.
std::string InflateWithDictionary(std::string_view compressed) {
  z_stream zs{};
  EXPECT_EQ(inflateInit(&zs), Z_OK);
  zs.next_in = reinterpret_cast<const Bytef*>(compressed.data());
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::string out(1 << 20, '\0');
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&zs, Z_SYNC_FLUSH);
  if (rc == Z_NEED_DICT) {
    const std::string_view dictionary = Spdy3Dictionary();
    EXPECT_EQ(inflateSetDictionary(&zs, reinterpret_cast<const Bytef*>(dictionary.data()),
                                   static_cast<uInt>(dictionary.size())),
              Z_OK);
    rc = inflate(&zs, Z_SYNC_FLUSH);
  }
  EXPECT_EQ(rc, Z_OK);
  EXPECT_EQ(zs.avail_in, 0u);
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

void ExpectInvalid(std::string_view block, const HeaderBlockLimits& limits = {}) {
  const absl::StatusOr<Headers> headers = DecodeHeaderBlock(block, limits);
  EXPECT_EQ(headers.status().code(), absl::StatusCode::kInvalidArgument) << headers.status();
}

// A block of `count` pairs named "0", "1", ... with value "v".
std::string BlockOfPairs(uint32_t count) {
  Headers headers;
  for (uint32_t i = 0; i < count; ++i) headers.emplace_back(std::to_string(i), "v");
  return EncodeHeaderBlock(headers);
}

TEST(SpdyDictionaryTest, IsTheSpecDictionary) {
  const std::string_view dictionary = Spdy3Dictionary();
  ASSERT_EQ(dictionary.size(), 1423u);
  EXPECT_EQ(adler32(1, reinterpret_cast<const Bytef*>(dictionary.data()), static_cast<uInt>(dictionary.size())),
            0xE3C6A7C2u);
  EXPECT_EQ(dictionary.substr(0, 19), "\0\0\0\7options\0\0\0\4head"s);
  EXPECT_EQ(dictionary.substr(dictionary.size() - 6), "enq=0.");
}

TEST(SpdyHeaderBlockTest, EncodesTheCapturedLayout) { EXPECT_EQ(EncodeHeaderBlock(kCapturedHeaders), kCapturedBlock); }

TEST(SpdyHeaderBlockTest, DecodesTheCapturedLayout) {
  const absl::StatusOr<Headers> headers = DecodeHeaderBlock(kCapturedBlock);
  ASSERT_TRUE(headers.ok()) << headers.status();
  EXPECT_EQ(*headers, kCapturedHeaders);
}

TEST(SpdyHeaderBlockTest, EmptyBlockIsACountOfZero) {
  EXPECT_EQ(EncodeHeaderBlock({}), "\0\0\0\0"s);
  const absl::StatusOr<Headers> headers = DecodeHeaderBlock("\0\0\0\0"s);
  ASSERT_TRUE(headers.ok()) << headers.status();
  EXPECT_TRUE(headers->empty());
}

TEST(SpdyHeaderBlockTest, EmptyAndNulJoinedValuesRoundTrip) {
  const Headers sent = {{"empty", ""}, {"multi", "one\0two\0three"s}};
  const absl::StatusOr<Headers> received = DecodeHeaderBlock(EncodeHeaderBlock(sent));
  ASSERT_TRUE(received.ok()) << received.status();
  EXPECT_EQ(*received, sent);
  EXPECT_EQ(FindHeader(*received, "multi"), "one");
  EXPECT_EQ(FindHeader(*received, "empty"), "");
  EXPECT_EQ(FindHeader(*received, "absent"), std::nullopt);
}

TEST(SpdyHeaderBlockTest, FindHeaderIgnoresCaseAndReturnsTheFirstPair) {
  const Headers headers = {{"streamtype", "error"}, {"streamtype", "stdout"}};
  EXPECT_EQ(FindHeader(headers, "streamType"), "error");
}

TEST(SpdyHeaderBlockTest, NamesAreLowerCasedBothWays) {
  EXPECT_EQ(EncodeHeaderBlock({{"StreamType", "Data"}}), "\0\0\0\1\0\0\0\x0astreamtype\0\0\0\4Data"s);
  const absl::StatusOr<Headers> headers = DecodeHeaderBlock("\0\0\0\1\0\0\0\4PoRt\0\0\0\2" "80"s);
  ASSERT_TRUE(headers.ok()) << headers.status();
  EXPECT_EQ(*headers, (Headers{{"port", "80"}}));
}

TEST(SpdyHeaderBlockTest, RejectsTruncatedBlocks) {
  ExpectInvalid("");
  ExpectInvalid("\0\0\0"s);                                 // count
  ExpectInvalid("\0\0\0\1\0\0"s);                           // name length
  ExpectInvalid("\0\0\0\1\0\0\0\4por"s);                    // name
  ExpectInvalid("\0\0\0\1\0\0\0\4port\0\0\0"s);             // value length
  ExpectInvalid("\0\0\0\1\0\0\0\4port\0\0\0\2" "8"s);       // value
  ExpectInvalid("\0\0\0\2\0\0\0\4port\0\0\0\2" "80"s);      // a pair short
  ExpectInvalid("\0\0\0\1\0\0\0\4port\xff\xff\xff\xff"s);   // huge value length
}

TEST(SpdyHeaderBlockTest, RejectsTrailingBytes) {
  ExpectInvalid(kCapturedBlock + "\0"s);
  ExpectInvalid("\0\0\0\0\0\0\0\0"s);
}

TEST(SpdyHeaderBlockTest, RejectsAnEmptyName) { ExpectInvalid("\0\0\0\1\0\0\0\0\0\0\0\1x"s); }

TEST(SpdyHeaderBlockTest, LimitsThePairCount) {
  EXPECT_TRUE(DecodeHeaderBlock(BlockOfPairs(1000)).ok());
  ExpectInvalid(BlockOfPairs(1001));
  ExpectInvalid("\xff\xff\xff\xff"s);  // a count no block could hold
  EXPECT_TRUE(DecodeHeaderBlock(BlockOfPairs(3), {.max_pairs = 3}).ok());
  ExpectInvalid(BlockOfPairs(4), {.max_pairs = 3});
}

TEST(SpdyHeaderCompressionTest, EmptyHeadersGiveTheCapturedBytes) {
  HeaderCompressor compressor;
  EXPECT_EQ(compressor.Compress({}), "\x78\xf9\xe3\xc6\xa7\xc2\x62\x60\x60\x60\x00\x00\x00\x00\xff\xff"s);
}

TEST(SpdyHeaderCompressionTest, CapturedHeadersInflateToTheCapturedBlock) {
  HeaderCompressor compressor;
  const std::string compressed = compressor.Compress(kCapturedHeaders);
  EXPECT_EQ(compressed.substr(0, 6), "\x78\xf9\xe3\xc6\xa7\xc2");
  EXPECT_EQ(compressed.substr(compressed.size() - 4), "\0\0\xff\xff"s);
  EXPECT_EQ(InflateWithDictionary(compressed), kCapturedBlock);

  HeaderDecompressor decompressor;
  const absl::StatusOr<Headers> headers = decompressor.Decompress(compressed);
  ASSERT_TRUE(headers.ok()) << headers.status();
  EXPECT_EQ(*headers, kCapturedHeaders);
}

TEST(SpdyHeaderCompressionTest, OneContextCarriesAcrossBlocks) {
  HeaderCompressor compressor;
  const Headers second_headers = {{"streamtype", "stdin"}};
  const std::string first = compressor.Compress(kCapturedHeaders);
  const std::string second = compressor.Compress(second_headers);
  const std::string third = compressor.Compress(kCapturedHeaders);
  EXPECT_NE(second.substr(0, 2), "\x78\xf9");  // no zlib header after the first block
  EXPECT_EQ(second.substr(second.size() - 4), "\0\0\xff\xff"s);
  EXPECT_LT(third.size(), first.size());  // back-references into the earlier blocks
  EXPECT_EQ(InflateWithDictionary(first + second + third),
            kCapturedBlock + EncodeHeaderBlock(second_headers) + kCapturedBlock);

  HeaderDecompressor decompressor;
  EXPECT_EQ(decompressor.Decompress(first).value(), kCapturedHeaders);
  EXPECT_EQ(decompressor.Decompress(second).value(), second_headers);
  EXPECT_EQ(decompressor.Decompress(third).value(), kCapturedHeaders);

  HeaderDecompressor fresh;
  EXPECT_EQ(fresh.Decompress(second).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SpdyHeaderCompressionTest, RejectsTwoBlocksInOneFrame) {
  HeaderCompressor compressor;
  const std::string first = compressor.Compress(kCapturedHeaders);
  const std::string second = compressor.Compress(kCapturedHeaders);
  HeaderDecompressor decompressor;
  EXPECT_EQ(decompressor.Decompress(first + second).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SpdyHeaderCompressionTest, RejectsATruncatedBlock) {
  HeaderCompressor compressor;
  const std::string compressed = compressor.Compress(kCapturedHeaders);
  HeaderDecompressor decompressor;
  EXPECT_EQ(decompressor.Decompress(compressed.substr(0, compressed.size() / 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SpdyHeaderCompressionTest, RejectsAnotherDictionary) {
  // The captured zlib header with a DICTID that is not the SPDY/3 dictionary's.
  const std::string compressed = "\x78\xf9\x00\x00\x00\x01\x62\x60\x60\x60\x00\x00\x00\x00\xff\xff"s;
  HeaderDecompressor decompressor;
  EXPECT_EQ(decompressor.Decompress(compressed).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SpdyHeaderCompressionTest, BoundsTheInflatedSize) {
  const Headers big = {{"data", std::string(300 << 10, 'x')}};
  const std::size_t block_size = EncodeHeaderBlock(big).size();
  HeaderCompressor compressor;
  const std::string compressed = compressor.Compress(big);
  ASSERT_LT(compressed.size(), 4096u);  // a small frame that would inflate far

  HeaderDecompressor default_limits;
  EXPECT_EQ(default_limits.Decompress(compressed).status().code(), absl::StatusCode::kInvalidArgument);
  HeaderDecompressor one_short({.max_decompressed_bytes = block_size - 1});
  EXPECT_EQ(one_short.Decompress(compressed).status().code(), absl::StatusCode::kInvalidArgument);
  HeaderDecompressor exact({.max_decompressed_bytes = block_size});
  const absl::StatusOr<Headers> headers = exact.Decompress(compressed);
  ASSERT_TRUE(headers.ok()) << headers.status();
  EXPECT_EQ(*headers, big);
}

TEST(SpdyHeaderCompressionTest, DecompressorKeepsFailingAfterAnError) {
  HeaderCompressor compressor;
  const std::string valid = compressor.Compress(kCapturedHeaders);
  HeaderDecompressor decompressor;
  EXPECT_FALSE(decompressor.Decompress("not zlib at all").ok());
  EXPECT_EQ(decompressor.Decompress(valid).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(HeaderDecompressor().Decompress(valid).ok());
}

TEST(SpdyHeaderCompressionTest, DecompressorFailsOnAValidZlibStreamWithABadBlock) {
  HeaderCompressor compressor;
  const std::string valid = compressor.Compress({{"", "empty name"}});
  HeaderDecompressor decompressor;
  EXPECT_EQ(decompressor.Decompress(valid).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(decompressor.Decompress(compressor.Compress({})).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace streaming::spdy
