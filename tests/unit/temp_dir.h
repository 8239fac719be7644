#pragma once
// A directory of a test's own under the test temp dir, removed with everything in it at
// scope exit; files written into it get their directories made.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace testutil {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "dstest.XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // `relative` under the directory.
  std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

  // Writes `content` at `relative`, its directories made; returns the full path.
  std::string Write(const std::string& relative, const std::string& content) const {
    const std::string full = *this / relative;
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    std::ofstream(full) << content;
    return full;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

 private:
  std::string path_;
};

}  // namespace testutil
