#pragma once
// Helpers shared by the table tests of the pure config translations
// (sandbox_config_test.cc, container_config_test.cc).
#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"

namespace testutil {

inline void ExpectInvalid(const absl::Status& s, const std::string& fragment) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(fragment));
}

// A file under the test's temp dir, removed at scope exit.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& content)
      : dir_(::testing::TempDir()), path_(dir_ + (dir_.empty() || dir_.back() != '/' ? "/" : "") + name) {
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }
  std::string dir() const { return path_.substr(0, path_.rfind('/')); }

 private:
  std::string dir_, path_;
};

}  // namespace testutil
