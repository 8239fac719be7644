// TarWriter's archives as GNU tar reads them back (TarExtractor runs tar -x).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "shim/checkpointing/tar_writer.h"
#include "shim/imagevolumes/tar_extract.h"

namespace shim::checkpointing {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TarWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/tar_writer_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Unpacks `archive` into a new directory and returns it.
  fs::path Extract(const fs::path& archive) {
    const fs::path out = dir_ / "x";
    fs::create_directories(out);
    auto tar = imagevolumes::TarExtractor::Start(out.string());
    EXPECT_TRUE(tar.ok()) << tar.status();
    EXPECT_TRUE(tar->Write(ReadFile(archive)).ok());
    absl::Status done = tar->Finish();
    EXPECT_TRUE(done.ok()) << done;
    return out;
  }
  fs::path dir_;
};

TEST_F(TarWriterTest, TreesLongNamesLargeFilesAndInMemoryFilesComeBackIdentical) {
  const fs::path src = dir_ / "src";
  const std::string deep = "a-directory-name-of-some-length/another-directory-name-of-some-length/and-a-third-one";
  fs::create_directories(src / deep);
  fs::create_directories(src / "empty");
  std::string big(3 * 1024 * 1024 + 17, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 % 251);
  std::ofstream(src / "pages-1.img", std::ios::binary) << big;
  std::ofstream(src / deep / "a-file-with-a-long-name-too.img") << "deep";
  std::ofstream(src / "zero.img");

  auto tar = TarWriter::Create((dir_ / "a.tar").string());
  ASSERT_TRUE(tar.ok()) << tar.status();
  ASSERT_TRUE(tar->AddTree("checkpoint", src.string()).ok());
  ASSERT_TRUE(tar->AddFile("config.dump", "{\"id\": \"x\"}\n").ok());
  ASSERT_TRUE(tar->Finish().ok());
  EXPECT_EQ(fs::file_size(dir_ / "a.tar") % 512, 0u);

  const fs::path out = Extract(dir_ / "a.tar");
  EXPECT_EQ(ReadFile(out / "checkpoint" / "pages-1.img"), big);
  EXPECT_EQ(ReadFile(out / "checkpoint" / deep / "a-file-with-a-long-name-too.img"), "deep");
  EXPECT_TRUE(fs::is_directory(out / "checkpoint" / "empty"));
  EXPECT_EQ(fs::file_size(out / "checkpoint" / "zero.img"), 0u);
  EXPECT_EQ(ReadFile(out / "config.dump"), "{\"id\": \"x\"}\n");
}

TEST_F(TarWriterTest, RefusesAnExistingFileANameUstarCannotHoldAndASymlink) {
  std::ofstream(dir_ / "exists.tar") << "x";
  EXPECT_FALSE(TarWriter::Create((dir_ / "exists.tar").string()).ok());
  auto tar = TarWriter::Create((dir_ / "b.tar").string());
  ASSERT_TRUE(tar.ok());
  EXPECT_FALSE(tar->AddFile(std::string(120, 'n'), "no '/' to split at").ok());
  fs::create_directories(dir_ / "links");
  fs::create_symlink("/etc/passwd", dir_ / "links" / "l");
  EXPECT_FALSE(tar->AddTree("links", (dir_ / "links").string()).ok());
}

}  // namespace
}  // namespace shim::checkpointing
