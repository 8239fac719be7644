// Docker's json-file log: the entry parser (table tests on lines as Docker 20.10 and
// 28.5 write them) and the tailer on a temp dir where the test plays Docker: appends,
// rotations by rename (max-file), by unlink (max-file=1), compressed rotated files,
// truncation, and the resume point across rotated files.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "shim/logs/json_file.h"
#include "shim/logs/json_file_tailer.h"

namespace shim::logs {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct ParseCase {
  std::string name, line;
  bool ok;
  LogStream stream = LogStream::kStdout;
  std::string content, timestamp;
};

TEST(JsonFileParseTest, Table) {
  const std::vector<ParseCase> cases = {
      {"plain stdout", R"({"log":"hello\n","stream":"stdout","time":"2026-12-01T10:00:00.123456789Z"})", true,
       LogStream::kStdout, "hello\n", "2026-12-01T10:00:00.123456789Z"},
      {"stderr, short fraction padded", R"({"log":"oops\n","stream":"stderr","time":"2026-12-01T10:00:00.5Z"})", true,
       LogStream::kStderr, "oops\n", "2026-12-01T10:00:00.500000000Z"},
      {"no fraction", R"({"log":"x\n","stream":"stdout","time":"2026-12-01T10:00:00Z"})", true, LogStream::kStdout,
       "x\n", "2026-12-01T10:00:00.000000000Z"},
      {"a piece: no newline", R"({"log":"aaaa","stream":"stdout","time":"2026-12-01T10:00:00.1Z"})", true,
       LogStream::kStdout, "aaaa", "2026-12-01T10:00:00.100000000Z"},
      {"Go's escapes", R"({"log":"q\" b\\ \u003c\u003e\u0026 \r\t\u0001 \u2028\n","stream":"stdout","time":"2026-12-01T10:00:00.1Z"})",
       true, LogStream::kStdout, "q\" b\\ <>& \r\t\x01 \xE2\x80\xA8\n", "2026-12-01T10:00:00.100000000Z"},
      {"invalid UTF-8 as Docker wrote it", R"({"log":"\ufffd\n","stream":"stdout","time":"2026-12-01T10:00:00.1Z"})",
       true, LogStream::kStdout, "\xEF\xBF\xBD\n", "2026-12-01T10:00:00.100000000Z"},
      {"raw UTF-8 and a surrogate pair", R"({"log":"é \ud83d\ude00\n","stream":"stdout","time":"2026-12-01T10:00:00.1Z"})",
       true, LogStream::kStdout, "é \xF0\x9F\x98\x80\n", "2026-12-01T10:00:00.100000000Z"},
      {"attrs (labels, tag) skipped",
       R"({"log":"a\n","stream":"stdout","attrs":{"tag":"t","x":"{\"}"},"time":"2026-12-01T10:00:00.1Z"})", true,
       LogStream::kStdout, "a\n", "2026-12-01T10:00:00.100000000Z"},
      {"log omitted when empty", R"({"stream":"stdout","time":"2026-12-01T10:00:00.1Z"})", true, LogStream::kStdout, "",
       "2026-12-01T10:00:00.100000000Z"},
      {"an offset kept", R"({"log":"a\n","stream":"stdout","time":"2026-12-01T11:00:00.1+01:00"})", true,
       LogStream::kStdout, "a\n", "2026-12-01T11:00:00.100000000+01:00"},
      {"no time", R"({"log":"a\n","stream":"stdout"})", false, LogStream::kStdout, "", ""},
      {"no stream", R"({"log":"a\n","time":"2026-12-01T10:00:00.1Z"})", false, LogStream::kStdout, "", ""},
      {"bad stream", R"({"log":"a\n","stream":"stdin","time":"2026-12-01T10:00:00.1Z"})", false, LogStream::kStdout, "", ""},
      {"bad time", R"({"log":"a\n","stream":"stdout","time":"yesterday"})", false, LogStream::kStdout, "", ""},
      {"cut short", R"({"log":"a\n","stream":"stdout","time":"2026-12-01T10:0)", false, LogStream::kStdout, "", ""},
      {"bad escape", R"({"log":"\x","stream":"stdout","time":"2026-12-01T10:00:00.1Z"})", false, LogStream::kStdout, "", ""},
      {"trailing bytes", R"({"log":"a","stream":"stdout","time":"2026-12-01T10:00:00.1Z"}x)", false, LogStream::kStdout, "", ""},
      {"not an object", "hello", false, LogStream::kStdout, "", ""},
      {"empty", "", false, LogStream::kStdout, "", ""},
  };
  JsonLogEntry entry;
  for (const ParseCase& c : cases) {
    absl::Status s = ParseJsonLogLine(c.line, entry);
    EXPECT_EQ(s.ok(), c.ok) << c.name << ": " << s;
    if (!s.ok() || !c.ok) continue;
    EXPECT_EQ(entry.stream, c.stream) << c.name;
    EXPECT_EQ(entry.content, c.content) << c.name;
    EXPECT_EQ(entry.timestamp, c.timestamp) << c.name;
    auto nanos = TimestampNanos(c.timestamp);
    ASSERT_TRUE(nanos.ok()) << c.name;
    EXPECT_EQ(entry.nanos, *nanos) << c.name;
    auto cheap = JsonLogLineNanos(c.line);
    ASSERT_TRUE(cheap.ok()) << c.name << cheap.status();
    EXPECT_EQ(*cheap, *nanos) << c.name;
  }
}

TEST(JsonFileParseTest, LineNanosWithoutDockersOrder) {
  auto nanos = JsonLogLineNanos(R"({"time":"2026-12-01T10:00:00.000000002Z","log":"a\n","stream":"stdout"})");
  ASSERT_TRUE(nanos.ok()) << nanos.status();
  EXPECT_EQ(*nanos % 1000000000, 2);
  EXPECT_FALSE(JsonLogLineNanos(R"({"log":"a"})").ok());
}

TEST(JsonFileParseTest, GzipLastTime) {
  const std::string extra = R"({"LastTime":"2026-12-01T10:00:00.000000007Z"})";
  std::string header = {'\x1f', '\x8b', 8, 4, 0, 0, 0, 0, 0, (char)255};
  header.push_back(static_cast<char>(extra.size() & 0xff));
  header.push_back(static_cast<char>(extra.size() >> 8));
  header += extra;
  auto last = GzipLastTime(header);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, *TimestampNanos("2026-12-01T10:00:00.000000007Z"));
  std::string no_extra = header.substr(0, 10);
  no_extra[3] = 0;
  EXPECT_TRUE(absl::IsNotFound(GzipLastTime(no_extra).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(GzipLastTime("plain text").status()));
}

// --- The tailer. ---

std::string Entry(int i, const char* stream = "stdout", const char* log_suffix = "\\n") {
  // One entry a nanosecond, at 10:00:00 + i ns.
  return absl::StrCat(R"({"log":"line-)", i, log_suffix, R"(","stream":")", stream,
                      R"(","time":"2026-12-01T10:00:00.)", absl::Dec(i, absl::kZeroPad9), "Z\"}\n");
}

int64_t NanosOf(int i) { return *TimestampNanos(absl::StrCat("2026-12-01T10:00:00.", absl::Dec(i, absl::kZeroPad9), "Z")); }

class JsonFileTailerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/json_file_tailer_test.XXXXXX";
    root_ = ::mkdtemp(dir);
    path_ = root_ + "/abc-json.log";
  }
  void TearDown() override { fs::remove_all(root_); }

  void Append(const std::string& text, const std::string& path = "") {
    std::ofstream(path.empty() ? path_ : path, std::ios::app) << text;
  }
  static std::string Entries(int from, int to) {
    std::string text;
    for (int i = from; i < to; ++i) text += Entry(i);
    return text;
  }
  void AppendLines(int from, int to) { Append(Entries(from, to)); }
  // `rotations` times: two lines from line-`from` on (line-from, from+1, then from+2...),
  // then Docker's rotation with max-file=`files`.
  void AppendPairsAndRotate(int from, int rotations, int files) {
    for (int i = 0; i < rotations; ++i) {
      AppendLines(from + 2 * i, from + 2 * i + 2);
      Rotate(files);
    }
  }
  // Docker's rotation with max-file=`files` (uncompressed): shift, rename, new file.
  void Rotate(int files) {
    std::error_code ec;
    fs::remove(absl::StrCat(path_, ".", files - 1), ec);
    for (int i = files - 1; i > 1; --i) fs::rename(absl::StrCat(path_, ".", i - 1), absl::StrCat(path_, ".", i), ec);
    fs::rename(path_, path_ + ".1");
    std::ofstream(path_).flush();
  }

  // Everything the tailer hands out now, as "line-N" contents without '\n'.
  std::vector<std::string> ReadAll(JsonFileTailer& tailer, absl::Status* error = nullptr) {
    std::vector<std::string> got;
    for (;;) {
      auto progress = tailer.Read(
          [&](const JsonLogEntry& e) {
            std::string c = e.content;
            if (!c.empty() && c.back() == '\n') c.pop_back();
            got.push_back(c);
          },
          4096);
      if (!progress.ok()) {
        if (error) *error = progress.status();
        else ADD_FAILURE() << progress.status();
        break;
      }
      if (*progress == JsonFileTailer::Progress::kIdle) break;
    }
    return got;
  }
  static std::vector<std::string> Lines(int from, int to) {
    std::vector<std::string> v;
    for (int i = from; i < to; ++i) v.push_back(absl::StrCat("line-", i));
    return v;
  }

  std::string root_, path_;
};

TEST_F(JsonFileTailerTest, FollowsAppendsAndWaitsForAnUnfinishedEntry) {
  AppendLines(0, 3);
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok()) << tailer.status();
  EXPECT_EQ(ReadAll(**tailer), Lines(0, 3));
  const std::string next = Entry(3);
  Append(next.substr(0, 10));  // Docker's write, seen half-way
  EXPECT_TRUE(ReadAll(**tailer).empty());
  Append(next.substr(10));
  AppendLines(4, 6);
  EXPECT_EQ(ReadAll(**tailer), Lines(3, 6));
  EXPECT_TRUE(ReadAll(**tailer).empty());
}

// An entry written in pieces, longer than one read (256 KiB), and the entries after it
// in the same read as its end.
TEST_F(JsonFileTailerTest, AnEntryLongerThanAReadArrivesInPieces) {
  AppendLines(0, 2);
  const std::string text(700 << 10, 'x');
  const std::string big = absl::StrCat(R"({"log":")", text, R"(","stream":"stdout","time":"2026-12-01T10:00:00.000000002Z"})", "\n");
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok()) << tailer.status();
  EXPECT_EQ(ReadAll(**tailer), Lines(0, 2));
  Append(big.substr(0, 1000));
  EXPECT_TRUE(ReadAll(**tailer).empty());
  Append(big.substr(1000, 400 << 10));
  EXPECT_TRUE(ReadAll(**tailer).empty());
  Append(big.substr(1000 + (400 << 10)) + Entries(3, 6));
  std::vector<std::string> got = ReadAll(**tailer);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], text);
  EXPECT_EQ(std::vector<std::string>(got.begin() + 1, got.end()), Lines(3, 6));
  AppendLines(6, 8);
  EXPECT_EQ(ReadAll(**tailer), Lines(6, 8));
}

TEST_F(JsonFileTailerTest, PiecesAndStreamsKeepTheirOrder) {
  Append(Entry(0, "stdout", ""));  // a piece of a long line: no '\n'
  Append(Entry(1, "stderr"));
  Append(Entry(2, "stdout"));
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok());
  std::vector<std::pair<LogStream, std::string>> got;
  ASSERT_TRUE((*tailer)->Read([&](const JsonLogEntry& e) { got.emplace_back(e.stream, e.content); }, 1 << 20).ok());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], std::make_pair(LogStream::kStdout, std::string("line-0")));
  EXPECT_EQ(got[1], std::make_pair(LogStream::kStderr, std::string("line-1\n")));
  EXPECT_EQ(got[2], std::make_pair(LogStream::kStdout, std::string("line-2\n")));
}

TEST_F(JsonFileTailerTest, FollowsRotationsByRename) {
  AppendLines(0, 5);
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok());
  EXPECT_EQ(ReadAll(**tailer), Lines(0, 5));
  AppendLines(5, 8);  // written, then rotated before the tailer looked again
  Rotate(3);
  AppendLines(8, 10);
  EXPECT_EQ(ReadAll(**tailer), Lines(5, 10));
  // Two rotations while the tailer was behind: it is now <log>.2, its successor <log>.1.
  AppendLines(10, 12);
  Rotate(3);
  AppendLines(12, 14);
  Rotate(3);
  AppendLines(14, 16);
  EXPECT_EQ(ReadAll(**tailer), Lines(10, 16));
  EXPECT_EQ((*tailer)->rotations(), 3u);
}

// Docker renames <log>.k-1 to <log>.k from the oldest down: while it rotates, one name
// in the chain is missing and the files above it have moved. These tests leave such a gap
// and let a thread finish the rotation 30 ms later, while the tailer looks.
class RotationInProgress {
 public:
  // Finishes a rotation whose renames stopped at <path>.`gap` (missing), making the new
  // file at the path with `fresh` in it.
  RotationInProgress(std::string path, int gap, std::string fresh)
      : thread_([path = std::move(path), gap, fresh = std::move(fresh)] {
          absl::SleepFor(absl::Milliseconds(30));
          for (int i = gap; i > 1; --i) fs::rename(absl::StrCat(path, ".", i - 1), absl::StrCat(path, ".", i));
          fs::rename(path, path + ".1");
          std::ofstream(path + ".new") << fresh;
          fs::rename(path + ".new", path);  // created with its content at once
        }) {}
  ~RotationInProgress() { thread_.join(); }

 private:
  std::thread thread_;
};

TEST_F(JsonFileTailerTest, FollowsPastTheGapOfARotationInProgress) {
  AppendLines(0, 2);
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok());
  EXPECT_EQ(ReadAll(**tailer), Lines(0, 2));
  // Its file (line-0..3) ends up <log>.3, then .2 holds line-4..5, .1 line-6..7.
  AppendPairsAndRotate(2, 3, 10);
  AppendLines(8, 10);
  fs::rename(path_ + ".3", path_ + ".4");  // the next rotation's first rename
  const std::string fresh = Entries(10, 12);
  absl::Status error;
  std::vector<std::string> got;
  {
    RotationInProgress rotation(path_, 3, fresh);
    got = ReadAll(**tailer, &error);
  }
  // It may have met the moment between the rename of <log> and its new file (idle then).
  if (error.ok()) {
    for (std::string& line : ReadAll(**tailer, &error)) got.push_back(std::move(line));
  }
  EXPECT_TRUE(error.ok()) << error;
  EXPECT_EQ(got, Lines(2, 12));
}

TEST_F(JsonFileTailerTest, OpensAtTheOldestFileWhileARotationIsInProgress) {
  // line-0..1 in <log>.4 (moved from .3), .3 missing, line-2..3 in .2, 4..5 in .1, 6..7 at the path.
  AppendPairsAndRotate(0, 3, 10);
  AppendLines(6, 8);
  fs::rename(path_ + ".3", path_ + ".4");
  const std::string fresh = Entries(8, 10);
  RotationInProgress rotation(path_, 3, fresh);
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok()) << tailer.status();
  EXPECT_EQ(ReadAll(**tailer), Lines(0, 10));
}

TEST_F(JsonFileTailerTest, MaxFileOneUnlinksAndStartsANewFile) {
  AppendLines(0, 3);
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok());
  EXPECT_EQ(ReadAll(**tailer), Lines(0, 3));
  AppendLines(3, 4);
  fs::remove(path_);  // Docker 23+ with max-file=1
  EXPECT_TRUE(ReadAll(**tailer) == Lines(3, 4));  // the rest of the unlinked file; the new one is not there yet
  AppendLines(4, 6);
  EXPECT_EQ(ReadAll(**tailer), Lines(4, 6));
}

TEST_F(JsonFileTailerTest, ResumesInTheRotatedFileThatHoldsTheTime) {
  AppendLines(0, 4);
  Rotate(4);
  AppendLines(4, 8);
  Rotate(4);
  AppendLines(8, 12);
  // From the start: the oldest file first.
  auto all = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(ReadAll(**all), Lines(0, 12));
  // From line-5's time: in <log>.1, from line-5 on.
  auto from5 = JsonFileTailer::Open(path_, NanosOf(5));
  ASSERT_TRUE(from5.ok());
  EXPECT_EQ(ReadAll(**from5), Lines(5, 12));
  // At a file's first entry: that file holds it (the one before ends earlier).
  auto from8 = JsonFileTailer::Open(path_, NanosOf(8));
  ASSERT_TRUE(from8.ok());
  EXPECT_EQ(ReadAll(**from8), Lines(8, 12));
  auto from11 = JsonFileTailer::Open(path_, NanosOf(11));
  ASSERT_TRUE(from11.ok());
  EXPECT_EQ(ReadAll(**from11), Lines(11, 12));
}

std::string GzipWithLastTime(int64_t last_i) {
  const std::string extra = absl::StrCat(R"({"LastTime":"2026-12-01T10:00:00.)", absl::Dec(last_i, absl::kZeroPad9), "Z\"}");
  std::string header = {'\x1f', '\x8b', 8, 4, 0, 0, 0, 0, 0, (char)255};
  header.push_back(static_cast<char>(extra.size()));
  header.push_back(0);
  return header + extra;  // no body: the tailer never decompresses
}

TEST_F(JsonFileTailerTest, CompressedRotatedFiles) {
  // <log>.1.gz holds line-0..3, <log> line-4..5.
  Append(GzipWithLastTime(3), path_ + ".1.gz");
  AppendLines(4, 6);
  // Entries from line-4 on: the compressed file ends before, not needed.
  auto from4 = JsonFileTailer::Open(path_, NanosOf(4));
  ASSERT_TRUE(from4.ok()) << from4.status();
  EXPECT_EQ(ReadAll(**from4), Lines(4, 6));
  // From line-2: only the API can read the compressed file.
  auto from2 = JsonFileTailer::Open(path_, NanosOf(2));
  EXPECT_TRUE(absl::IsFailedPrecondition(from2.status())) << from2.status();
  EXPECT_THAT(from2.status().message(), HasSubstr("compressed"));

  // The file being read is rotated and compressed (compress=true) before the tailer
  // looks: found by its last entry's time, the successor is at the path.
  AppendLines(6, 8);
  fs::rename(path_ + ".1.gz", path_ + ".2.gz");
  fs::remove(path_);  // stands for rename to .1, gzip to .1.gz, remove .1
  Append(GzipWithLastTime(7), path_ + ".1.gz");
  AppendLines(8, 10);
  EXPECT_EQ(ReadAll(**from4), Lines(6, 10));
}

TEST_F(JsonFileTailerTest, FallsBackWhenItCannotFollowForSure) {
  auto missing = JsonFileTailer::Open(path_, 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(missing.status())) << missing.status();

  AppendLines(0, 4);
  auto truncated = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(truncated.ok());
  EXPECT_EQ(ReadAll(**truncated), Lines(0, 4));
  ::truncate(path_.c_str(), 0);  // by hand (or Docker 20.10's max-file=1)
  AppendLines(4, 5);
  absl::Status error;
  ReadAll(**truncated, &error);
  EXPECT_TRUE(absl::IsFailedPrecondition(error)) << error;
  EXPECT_THAT(error.message(), HasSubstr("truncated"));

  // Rotated three times with max-file=3 while behind: its file was removed.
  auto behind = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(behind.ok());
  EXPECT_EQ(ReadAll(**behind), Lines(4, 5));
  AppendPairsAndRotate(10, 3, 3);
  error = absl::OkStatus();
  ReadAll(**behind, &error);
  EXPECT_TRUE(absl::IsFailedPrecondition(error)) << error;
  EXPECT_THAT(error.message(), HasSubstr("rotated more than once"));

  if (::geteuid() != 0) {
    ::chmod(path_.c_str(), 0);
    auto unreadable = JsonFileTailer::Open(path_, 0);
    EXPECT_TRUE(absl::IsFailedPrecondition(unreadable.status())) << unreadable.status();
  }
}

TEST_F(JsonFileTailerTest, SkipsWhatIsNotAnEntry) {
  Append("garbage\n");
  AppendLines(0, 2);
  auto tailer = JsonFileTailer::Open(path_, 0);
  ASSERT_TRUE(tailer.ok());
  EXPECT_EQ(ReadAll(**tailer), Lines(0, 2));
  EXPECT_EQ((*tailer)->skipped_lines(), 1u);
}

}  // namespace
}  // namespace shim::logs
