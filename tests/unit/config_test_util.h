#pragma once
// Helpers shared by the table tests of the pure config translations
// (sandbox_config_test.cc, container_config_test.cc).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace testutil {

inline void ExpectInvalid(const absl::Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(fragment));
}

// A file under the test's temp dir, removed at scope exit.
class TempFile {
 public:
  // In a directory of this process's own: ctest runs tests of one binary in parallel
  // processes, which would otherwise share (and delete) each other's files.
  TempFile(const std::string& name, const std::string& content)
      : dir_(absl::StrCat(::testing::TempDir(), "dstest-", ::getpid())), path_(dir_ + "/" + name) {
    ::mkdir(dir_.c_str(), 0700);
    std::ofstream(path_) << content;
  }
  ~TempFile() {
    std::remove(path_.c_str());
    ::rmdir(dir_.c_str());  // once the process's last file is gone
  }
  const std::string& path() const { return path_; }
  std::string dir() const { return path_.substr(0, path_.rfind('/')); }

 private:
  std::string dir_, path_;
};

}  // namespace testutil
