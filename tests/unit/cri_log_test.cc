#include "shim/logs/cri_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "common/strings.h"
#include "common/unique_fd.h"

namespace shim::logs {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// 2026-12-01T11:22:30Z
constexpr int64_t kDecemberFirst = 1796124150 * kSecond;
constexpr std::string_view kStamp = "2026-12-01T11:22:30.123456789Z";

// One CRI line read the way the kubelet reads it (parseCRILog in kubernetes
// pkg/kubelet/kuberuntime/logs): three space-delimited fields, then the content; an F
// line's content keeps its '\n', a P line's loses it. The timestamp is parsed with
// absl's RFC 3339 parser, independent of the code under test.
struct KubeletLine {
  int64_t nanos;
  std::string stream;
  bool partial;
  std::string content;
};

std::optional<KubeletLine> KubeletParse(std::string_view line) {
  std::string_view fields[3];
  for (std::string_view& field : fields) {
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    field = line.substr(0, space);
    line.remove_prefix(space + 1);
  }
  absl::Time time;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, common::Av(fields[0]), &time, &error)) return std::nullopt;
  if (fields[1] != "stdout" && fields[1] != "stderr") return std::nullopt;
  const bool partial = fields[2] == "P";
  if (partial && line.ends_with('\n')) line.remove_suffix(1);
  return KubeletLine{absl::ToUnixNanos(time), std::string(fields[1]), partial, std::string(line)};
}

// The file's complete lines, each with its '\n'.
std::vector<std::string_view> Lines(std::string_view file) {
  std::vector<std::string_view> lines;
  for (std::size_t newline; (newline = file.find('\n')) != std::string_view::npos;) {
    lines.push_back(file.substr(0, newline + 1));
    file.remove_prefix(newline + 1);
  }
  return lines;
}

auto Fields(const ResumePoint& p) { return std::tuple(p.last_nanos, p.lines_at_last, p.valid_length); }

// What FindResumePoint must find in a file of CRI lines, worked out forwards.
ResumePoint ExpectedResumePoint(std::string_view file) {
  ResumePoint point;
  const std::vector<std::string_view> lines = Lines(file);
  if (lines.empty()) return point;
  point.valid_length = file.rfind('\n') + 1;
  point.last_nanos = KubeletParse(lines.back())->nanos;
  for (auto line = lines.rbegin(); line != lines.rend() && KubeletParse(*line)->nanos == point.last_nanos; ++line)
    ++point.lines_at_last;
  return point;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "cri_log_test.XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string File(std::string_view content, const std::string& name = "0.log") const {
    const std::string path = path_ + "/" + name;
    common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    EXPECT_EQ(::write(fd.get(), content.data(), content.size()), static_cast<ssize_t>(content.size()));
    return path;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --- ParseDockerLogMessage

struct MessageCase {
  std::string message;
  std::string timestamp;
  std::string content;
};
void PrintTo(const MessageCase& c, std::ostream* os) { *os << ::testing::PrintToString(c.message); }

class DockerMessage : public ::testing::TestWithParam<MessageCase> {};

TEST_P(DockerMessage, Splits) {
  auto parsed = ParseDockerLogMessage(GetParam().message);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->timestamp, GetParam().timestamp);
  EXPECT_EQ(parsed->content, GetParam().content);
  // Views into the message, not copies.
  EXPECT_EQ(parsed->timestamp.data(), GetParam().message.data());
}

INSTANTIATE_TEST_SUITE_P(
    CriLog, DockerMessage,
    ::testing::Values(MessageCase{"2026-12-01T11:22:30.123456789Z hello\n", std::string(kStamp), "hello\n"},
                      MessageCase{"2026-12-01T11:22:30.123456789Z partial", std::string(kStamp), "partial"},
                      MessageCase{"2026-12-01T11:22:30.123456789Z \n", std::string(kStamp), "\n"},
                      MessageCase{"2026-12-01T11:22:30.123456789Z ", std::string(kStamp), ""},
                      MessageCase{"2026-12-01T11:22:30.123456789Z  two spaces", std::string(kStamp), " two spaces"},
                      MessageCase{"2026-12-01T12:22:30.5+01:00 x\r\n", "2026-12-01T12:22:30.5+01:00", "x\r\n"},
                      MessageCase{"2026-12-01T11:22:30Z 2026-12-01T11:22:30Z y", "2026-12-01T11:22:30Z",
                                  "2026-12-01T11:22:30Z y"}));

class DockerMessageInvalid : public ::testing::TestWithParam<std::string> {};

TEST_P(DockerMessageInvalid, RejectsWithInvalidArgument) {
  auto parsed = ParseDockerLogMessage(GetParam());
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(CriLog, DockerMessageInvalid,
                         ::testing::Values("", "hello world\n", "2026-12-01T11:22:30.123456789Z",
                                           "2026-12-01T11:22:30.123456789Zhello", "2026-12-01T11:22:30.123456789Z\tx",
                                           "2026-12-01T11:22:30.123456789 x", "2026-12-01 11:22:30Z x",
                                           " 2026-12-01T11:22:30Z x", std::string("\x01\0\0\0\0\0\0\x05hello", 13),
                                           "Error grabbing logs: log file is gone\n"));

TEST(CriLogDockerMessage, ErrorQuotesTheMessageEscapedAndShort) {
  const auto parsed = ParseDockerLogMessage("\x01" + std::string(100, 'x'));
  EXPECT_EQ(parsed.status().message(), "invalid Docker log message \"\\x01" + std::string(63, 'x') +
                                           "...\": want an RFC 3339 timestamp and a space first");
}

// --- AppendCriLines

struct AppendCase {
  LogStream stream;
  std::string content;
  std::size_t max_line;
  std::vector<std::string> lines;  // after "<timestamp> "
};
void PrintTo(const AppendCase& c, std::ostream* os) { *os << ::testing::PrintToString(c.content) << " " << c.max_line; }

class Append : public ::testing::TestWithParam<AppendCase> {};

TEST_P(Append, WritesLines) {
  std::string out = "kept ";
  AppendCriLines(GetParam().stream, kStamp, GetParam().content, out, GetParam().max_line);
  std::string want = "kept ";
  for (const std::string& line : GetParam().lines) want += std::string(kStamp) + " " + line + "\n";
  EXPECT_EQ(out, want);
}

constexpr LogStream kOut = LogStream::kStdout;
constexpr LogStream kErr = LogStream::kStderr;

INSTANTIATE_TEST_SUITE_P(
    CriLog, Append,
    ::testing::Values(AppendCase{kOut, "", 4, {}},                     // nothing for an empty message
                      AppendCase{kOut, "\n", 4, {"stdout F "}},        // an empty line
                      AppendCase{kOut, "abc\n", 4, {"stdout F abc"}},  // both streams
                      AppendCase{kErr, "abc\n", 4, {"stderr F abc"}},
                      AppendCase{kOut, "abc", 4, {"stdout P abc"}},  // a partial message
                      AppendCase{kErr, "abc", 4, {"stderr P abc"}},
                      AppendCase{kOut, "a\rb\r\n", 9, {"stdout F a\rb\r"}},  // '\r' is content
                      AppendCase{kOut, "a b  c\t\n", 9, {"stdout F a b  c\t"}},
                      AppendCase{kOut, "abcd\n", 4, {"stdout F abcd"}},  // exactly max_line
                      AppendCase{kOut, "abcde\n", 4, {"stdout P abcd", "stdout F e"}},
                      AppendCase{kOut, "abcdefghijkl\n", 4, {"stdout P abcd", "stdout P efgh", "stdout F ijkl"}},
                      AppendCase{kOut, "abcd", 4, {"stdout P abcd"}},
                      AppendCase{kOut, "abcde", 4, {"stdout P abcd", "stdout P e"}},
                      AppendCase{kOut, "abcdefghijkl", 4, {"stdout P abcd", "stdout P efgh", "stdout P ijkl"}},
                      AppendCase{kOut, "abc", 1, {"stdout P a", "stdout P b", "stdout P c"}},
                      AppendCase{kOut, "a\xc3\xa9\n", 2, {"stdout P a\xc3", "stdout F \xa9"}},  // cut inside é
                      AppendCase{kOut, std::string(100, 'x') + "\n", 0, {"stdout F " + std::string(100, 'x')}},
                      AppendCase{kOut, "a\nbc", 4, {"stdout F a", "stdout P bc"}},  // any '\n' ends a line
                      AppendCase{kOut, "\n\n", 4, {"stdout F ", "stdout F "}},
                      AppendCase{kOut, "abcde\nf\n", 4, {"stdout P abcd", "stdout F e", "stdout F f"}}));

TEST(CriLogAppend, CutsAtContainerdsDefaultLimit) {
  struct Case {
    std::size_t bytes;
    std::vector<std::size_t> pieces;
  };
  for (const Case& c : {Case{kMaxLineBytes - 1, {kMaxLineBytes - 1}}, Case{kMaxLineBytes, {kMaxLineBytes}},
                        Case{kMaxLineBytes + 1, {kMaxLineBytes, 1}},
                        Case{3 * kMaxLineBytes, {kMaxLineBytes, kMaxLineBytes, kMaxLineBytes}},
                        Case{3 * kMaxLineBytes + 7, {kMaxLineBytes, kMaxLineBytes, kMaxLineBytes, 7}}}) {
    SCOPED_TRACE(c.bytes);
    std::string content;
    for (std::size_t i = 0; i < c.bytes; ++i) content += static_cast<char>('a' + i % 26);
    std::string out;
    AppendCriLines(kOut, kStamp, content + "\n", out);
    const std::vector<std::string_view> lines = Lines(out);
    ASSERT_EQ(lines.size(), c.pieces.size());
    std::string joined;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const std::optional<KubeletLine> line = KubeletParse(lines[i]);
      ASSERT_TRUE(line.has_value());
      EXPECT_EQ(line->partial, i + 1 < lines.size());
      EXPECT_EQ(line->content.size(), c.pieces[i] + (line->partial ? 0 : 1));
      joined += line->content;
    }
    EXPECT_EQ(joined, content + "\n");
  }
}

// Messages as Docker sends them (one line each, '\n' last unless partial, partial
// ones of a long line) through AppendCriLines, then read back as the kubelet reads:
// each stream's contents join back to what the container wrote.
TEST(CriLogAppend, KubeletReadsBackWhatWasWritten) {
  std::mt19937 random(8);
  constexpr char kAlphabet[] = "abc XYZ 019\r\t\"\\{}\xc3\xa9\xe2\x82\xac\x00";
  const std::string_view alphabet(kAlphabet, sizeof kAlphabet - 1);
  for (std::size_t max_line : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{100}, kMaxLineBytes}) {
    SCOPED_TRACE(max_line);
    std::map<std::string, std::string> written, read;
    std::vector<int64_t> stamps;
    std::string file;
    for (int i = 0; i < 400; ++i) {
      const bool err = random() % 3 == 0;
      const std::size_t length = random() % 5 == 0 ? random() % (3 * max_line + 3) : random() % 40;
      std::string content;
      for (std::size_t j = 0; j < length; ++j) content += alphabet[random() % alphabet.size()];
      if (random() % 4 != 0) content += '\n';
      // Increasing instants, with 0 to 9 fraction digits and Z or an offset.
      const absl::Time time = absl::FromUnixNanos(kDecemberFirst + i * 1'000'003'007LL);
      const std::string stamp = random() % 2
                                    ? absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", time, absl::UTCTimeZone())
                                    : absl::FormatTime("%Y-%m-%d%ET%H:%M:%E9S%Ez", time, absl::FixedTimeZone(-16200));
      AppendCriLines(err ? kErr : kOut, stamp, content, file, max_line);
      written[err ? "stderr" : "stdout"] += content;
      stamps.push_back(absl::ToUnixNanos(time));
    }
    for (std::string_view line : Lines(file)) {
      const std::optional<KubeletLine> parsed = KubeletParse(line);
      ASSERT_TRUE(parsed.has_value()) << line;
      EXPECT_LE(parsed->content.size(), max_line + (parsed->partial ? 0 : 1)) << line;
      EXPECT_TRUE(std::find(stamps.begin(), stamps.end(), parsed->nanos) != stamps.end()) << line;
      read[parsed->stream] += parsed->content;
    }
    EXPECT_TRUE(file.empty() || file.back() == '\n');
    EXPECT_EQ(read, written);
  }
}

// --- TimestampNanos and SinceParameter

struct StampCase {
  std::string text;
  int64_t nanos;
};
void PrintTo(const StampCase& c, std::ostream* os) { *os << c.text; }

class Timestamp : public ::testing::TestWithParam<StampCase> {};

TEST_P(Timestamp, Parses) {
  auto nanos = TimestampNanos(GetParam().text);
  ASSERT_TRUE(nanos.ok()) << nanos.status();
  EXPECT_EQ(*nanos, GetParam().nanos);
}

INSTANTIATE_TEST_SUITE_P(
    CriLog, Timestamp,
    ::testing::Values(
        StampCase{"1970-01-01T00:00:00Z", 0}, StampCase{"1970-01-01T00:00:00.000000001Z", 1},
        StampCase{"2026-12-01T11:22:30Z", kDecemberFirst},
        StampCase{"2026-12-01T11:22:30.5Z", kDecemberFirst + 500'000'000},
        StampCase{"2026-12-01T11:22:30.050Z", kDecemberFirst + 50'000'000},
        StampCase{std::string(kStamp), kDecemberFirst + 123'456'789},
        StampCase{"2026-12-01T11:22:30.000000000Z", kDecemberFirst},
        StampCase{"2026-12-01T12:22:30.123456789+01:00", kDecemberFirst + 123'456'789},
        StampCase{"2026-12-01T06:52:30.123456789-04:30", kDecemberFirst + 123'456'789},
        StampCase{"2026-12-02T11:21:30+23:59", kDecemberFirst}, StampCase{"2026-12-01T11:22:30-00:00", kDecemberFirst},
        StampCase{"2024-02-29T23:59:59Z", 1709251199 * kSecond}, StampCase{"2000-02-29T00:00:00Z", 951782400 * kSecond},
        StampCase{"2100-03-01T00:00:00Z", 4107542400 * kSecond}, StampCase{"1969-12-31T23:00:00-01:00", 0},
        StampCase{"2262-04-11T23:47:16.854775807Z", kInt64Max}));

class TimestampInvalid : public ::testing::TestWithParam<std::string> {};

TEST_P(TimestampInvalid, RejectsWithInvalidArgument) {
  auto nanos = TimestampNanos(GetParam());
  ASSERT_FALSE(nanos.ok()) << *nanos;
  EXPECT_EQ(nanos.status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    CriLog, TimestampInvalid,
    ::testing::Values("", "2026-12-01", "2026-12-01T11:22:30", "2026-12-01T11:22:30.Z",
                      "2026-12-01T11:22:30.1234567890Z", "2026-12-01T11:22:30,5Z", "2026-12-01 11:22:30Z",
                      "2026-12-01t11:22:30Z", "2026-12-01T11:22:30z", "2026-12-01T11:22Z", "26-12-01T11:22:30Z",
                      "+2026-12-01T11:22:30Z", "2026-1-01T11:22:30Z", "2026-13-01T11:22:30Z", "2026-00-01T11:22:30Z",
                      "2026-12-00T11:22:30Z", "2026-02-29T00:00:00Z", "2100-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
                      "2026-12-01T24:00:00Z", "2026-12-01T11:60:30Z", "2026-12-01T11:22:60Z", "2026-12-01T11:22:30+01",
                      "2026-12-01T11:22:30+0100", "2026-12-01T11:22:30+24:00", "2026-12-01T11:22:30+01:60",
                      "2026-12-01T11:22:30 Z", "2026-12-01T11:22:30Z ", " 2026-12-01T11:22:30Z",
                      "2026-12-01T11:22:30.123456789ZZ", "1969-12-31T23:59:59.999999999Z", "1970-01-01T00:30:00+01:00",
                      "0000-01-01T00:00:00Z", "2262-04-11T23:47:16.854775808Z", "2262-04-12T00:00:00Z",
                      "9999-12-31T23:59:59Z", "2026-12-01T11:22:3\xd9Z", "1796124150.000000000"));

TEST(CriLogTimestamp, ErrorNamesTheText) {
  EXPECT_EQ(TimestampNanos("yesterday").status().message(),
            "invalid timestamp \"yesterday\": want RFC 3339 between 1970 and 2262, e.g. 2026-12-01T11:22:30.5Z");
}

// `since` read back as Docker reads it (api/types/time ParseTimestamps): the seconds,
// plus the fraction scaled to nanoseconds.
__int128 DockerSinceNanos(const std::string& since) {
  const std::size_t dot = since.find('.');
  const std::string fraction = since.substr(dot + 1);
  __int128 nanos = std::stoll(fraction);
  for (std::size_t i = fraction.size(); i < 9; ++i) nanos *= 10;
  return __int128{std::stoll(since.substr(0, dot))} * kSecond + nanos;
}

TEST(CriLogSince, Table) {
  EXPECT_EQ(SinceParameter(0), "0.000000000");
  EXPECT_EQ(SinceParameter(1), "0.000000001");
  EXPECT_EQ(SinceParameter(kDecemberFirst + 123'456'789), "1796124150.123456789");
  EXPECT_EQ(SinceParameter(kDecemberFirst + 500'000'000), "1796124150.500000000");
  EXPECT_EQ(SinceParameter(kInt64Max), "9223372036.854775807");
  // Before the epoch the seconds are floored, as time.Unix(seconds, fraction) needs.
  EXPECT_EQ(SinceParameter(-1), "-1.999999999");
  EXPECT_EQ(SinceParameter(-kSecond), "-1.000000000");
  EXPECT_EQ(SinceParameter(std::numeric_limits<int64_t>::min()), "-9223372037.145224192");
}

// Every fraction width, 'Z' and offsets: the timestamp's instant reaches Docker
// unchanged, and agrees with absl's RFC 3339 parser.
TEST(CriLogSince, RoundTripsEveryFractionWidth) {
  for (int digits = 0; digits <= 9; ++digits) {
    for (const char* zone : {"Z", "+00:00", "+05:45", "-11:00"}) {
      std::string text = "2031-07-15T08:09:10";
      if (digits > 0) text += "." + std::string("987654321").substr(0, digits);
      text += zone;
      SCOPED_TRACE(text);
      auto nanos = TimestampNanos(text);
      ASSERT_TRUE(nanos.ok()) << nanos.status();
      absl::Time time;
      std::string error;
      ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, text, &time, &error)) << error;
      EXPECT_EQ(*nanos, absl::ToUnixNanos(time));
      EXPECT_EQ(DockerSinceNanos(SinceParameter(*nanos)), *nanos);
    }
  }
}

TEST(CriLogSince, RoundTripsRandomInstants) {
  std::mt19937_64 random(8);
  for (int i = 0; i < 20000; ++i) {
    const int64_t nanos = static_cast<int64_t>(random() >> 1);
    const int offset_minutes = static_cast<int>(random() % (2 * 1439 + 1)) - 1439;  // up to ±23:59
    const absl::TimeZone zone = absl::FixedTimeZone(offset_minutes * 60);
    const std::string text = absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*S%Ez", absl::FromUnixNanos(nanos), zone);
    auto parsed = TimestampNanos(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    ASSERT_EQ(*parsed, nanos) << text;
    ASSERT_EQ(DockerSinceNanos(SinceParameter(nanos)), nanos);
  }
}

// --- FindResumePoint

std::string CriFile(const std::vector<std::tuple<LogStream, std::string, std::string>>& messages,
                    std::size_t max_line = kMaxLineBytes) {
  std::string file;
  for (const auto& [stream, stamp, content] : messages) AppendCriLines(stream, stamp, content, file, max_line);
  return file;
}

absl::StatusOr<ResumePoint> Resume(const TempDir& dir, std::string_view content) {
  return FindResumePoint(dir.File(content));
}

TEST(CriLogResume, MissingFileIsAnEmptyOne) {
  TempDir dir;
  auto point = FindResumePoint(dir.path() + "/none.log");
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{}));
  point = FindResumePoint(dir.path() + "/gone/0.log");
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{}));
}

TEST(CriLogResume, EmptyOrNoCompleteLine) {
  TempDir dir;
  for (std::string_view content : {"", "2026-12-01T11:22:30.123456789Z stdout F interrupt", "garbage"}) {
    auto point = Resume(dir, content);
    ASSERT_TRUE(point.ok()) << point.status();
    EXPECT_EQ(Fields(*point), Fields(ResumePoint{})) << content;
  }
}

TEST(CriLogResume, LastCompleteLine) {
  TempDir dir;
  const std::string file = CriFile({{kOut, "2026-12-01T11:22:29Z", "one\n"}, {kErr, std::string(kStamp), "two\n"}});
  auto point = Resume(dir, file);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{kDecemberFirst + 123'456'789, 1, file.size()}));
}

TEST(CriLogResume, PartialLastLineIsLeftOut) {
  TempDir dir;
  const std::string file = CriFile({{kOut, std::string(kStamp), "one\n"}});
  auto point = Resume(dir, file + "2026-12-01T11:22:31Z stdout F cut sho");
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{kDecemberFirst + 123'456'789, 1, file.size()}));
}

TEST(CriLogResume, CountsTheLinesOfTheLastInstant) {
  TempDir dir;
  // A long message cut into P, P, F; a partial message; both streams; one instant
  // written two ways; the line before at another instant.
  const std::string file = CriFile({{kOut, "2026-12-01T11:22:29Z", "before\n"},
                                    {kOut, "2026-12-01T11:22:30Z", "abcdefghij\n"},
                                    {kErr, "2026-12-01T11:22:30Z", "partial"},
                                    {kOut, "2026-12-01T12:22:30.000+01:00", "same instant\n"}},
                                   4);
  auto point = Resume(dir, file);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{kDecemberFirst, 3 + 2 + 3, file.size()}));
}

TEST(CriLogResume, OneInstantLongerThanABlock) {
  TempDir dir;
  // 300 KiB cut into 16 KiB pieces, then 5000 short lines, all at one instant.
  std::string file = CriFile(
      {{kOut, "2026-12-01T11:22:29Z", "before\n"}, {kOut, std::string(kStamp), std::string(300 * 1024, 'x') + "\n"}});
  auto point = Resume(dir, file);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{kDecemberFirst + 123'456'789, 19, file.size()}));

  for (int i = 0; i < 5000; ++i) AppendCriLines(kErr, kStamp, "line " + std::to_string(i) + "\n", file);
  point = Resume(dir, file);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{kDecemberFirst + 123'456'789, 19 + 5000, file.size()}));

  // Only lines at that instant, from the file's first byte.
  point = Resume(dir, file.substr(file.find('\n') + 1));
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->lines_at_last, 19 + 5000);
}

TEST(CriLogResume, CorruptLastLineIsInvalidArgumentWithThePath) {
  TempDir dir;
  const std::string good = CriFile({{kOut, std::string(kStamp), "one\n"}});
  for (const std::string& last :
       {std::string("hello world\n"), std::string("\n"), std::string(kStamp) + " stdin F x\n",
        std::string(kStamp) + " stdout X x\n", std::string(kStamp) + " stdout F\n",
        std::string(kStamp) + " stdout FP x\n", std::string("2026-12-01T11:22:30.1234567891Z stdout F x\n")}) {
    SCOPED_TRACE(last);
    const std::string path = dir.File(good + last);
    auto point = FindResumePoint(path);
    ASSERT_FALSE(point.ok());
    EXPECT_EQ(point.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(point.status().message().find(path), std::string::npos) << point.status();
  }
}

TEST(CriLogResume, CorruptEarlierLineEndsTheRun) {
  TempDir dir;
  const std::string last = CriFile({{kOut, std::string(kStamp), "one\n"}});
  auto point = Resume(dir, "not a CRI line\n" + last);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(Fields(*point), Fields(ResumePoint{kDecemberFirst + 123'456'789, 1, 15 + last.size()}));
}

TEST(CriLogResume, UnreadableIsAnError) {
  TempDir dir;
  EXPECT_FALSE(FindResumePoint(dir.path()).ok());  // a directory
}

// An interrupted write can stop anywhere: cut the file at every byte of its last
// lines, the resume point is always the one worked out forwards.
TEST(CriLogResume, FileCutAtEveryByteOfItsLastLines) {
  struct Case {
    std::string name;
    std::string file;
    std::size_t tail_lines;
  };
  std::string many_at_one_instant = CriFile({{kOut, "2026-12-01T11:22:29Z", "before\n"}});
  for (int i = 0; i < 2000; ++i)
    AppendCriLines(kOut, kStamp, "short line " + std::to_string(i) + "\n", many_at_one_instant);
  AppendCriLines(kErr, "2026-12-01T11:22:31.5Z", "last, cut in two pieces\n", many_at_one_instant, 12);
  const Case cases[] = {
      {"pieces",
       CriFile({{kOut, "2026-12-01T11:22:28Z", "first\n"},
                {kErr, "2026-12-01T11:22:29.1Z", "second, a partial message"},
                {kOut, std::string(kStamp), std::string(1500, 'y') + "\n"},
                {kOut, "2026-12-01T11:22:31Z", "\n"}},
               500),
       5},
      {"many at one instant", many_at_one_instant, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    const std::string path = dir.File(c.file);
    const std::vector<std::string_view> lines = Lines(c.file);
    std::size_t tail = c.file.size();
    for (std::size_t i = 0; i < c.tail_lines; ++i) tail -= lines[lines.size() - 1 - i].size();
    common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    for (std::size_t length = c.file.size(); length + 1 > tail; --length) {
      ASSERT_EQ(::ftruncate(fd.get(), static_cast<off_t>(length)), 0);
      auto point = FindResumePoint(path);
      ASSERT_TRUE(point.ok()) << point.status();
      ASSERT_EQ(Fields(*point), Fields(ExpectedResumePoint(std::string_view(c.file).substr(0, length))))
          << "cut at " << length;
    }
  }
}

}  // namespace
}  // namespace shim::logs
