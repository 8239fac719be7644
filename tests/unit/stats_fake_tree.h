#pragma once
// A temporary directory tree for the stats readers' tests (stats_*_test.cc): fake
// /proc and cgroup files, or a tree for the disk-usage walker.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace testutil {

class FakeTree {
 public:
  explicit FakeTree(std::string base = ::testing::TempDir()) {
    if (base.empty() || base.back() != '/') base += '/';
    std::string tmpl = base + "stats_tree.XXXXXX";
    root_ = ::mkdtemp(tmpl.data());
  }
  ~FakeTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  const std::string& root() const { return root_; }
  std::string Path(const std::string& relative) const { return root_ + "/" + relative; }

  // Writes `content` at `relative`, making its directories.
  void Write(const std::string& relative, const std::string& content) const {
    std::filesystem::path path = Path(relative);
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  }

 private:
  std::string root_;
};

}  // namespace testutil
