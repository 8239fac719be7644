// The config file and --print-config, through the binary (exit codes, messages).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/integration/env.h"
#include "tests/integration/daemon.h"

namespace {

namespace fs = std::filesystem;

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dsops-config-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string File(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  testenv::Exit Run(const std::vector<std::string>& args) {
    testenv::Daemon shim(dir_, args);
    auto e = shim.Wait(std::chrono::seconds(10));
    EXPECT_TRUE(e.has_value()) << "still running";
    return e.value_or(testenv::Exit{});
  }
  static int Lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

  fs::path dir_;
};

TEST_F(ConfigFileTest, PrintConfigReadsBackToTheSameConfiguration) {
  const auto first = Run({"--print-config", "--docker-endpoint", testenv::DockerEndpoint(), "--root-directory",
                          "/srv/dockershim", "--runtime-cgroups", "/docker-runtime"});
  ASSERT_EQ(first.code, 0) << first.stderr_text;
  EXPECT_NE(first.stdout_text.find("root-directory=\"/srv/dockershim\""), std::string::npos) << first.stdout_text;
  EXPECT_NE(first.stdout_text.find("cni-conf-dir=\"/etc/cni/net.d\""), std::string::npos) << "defaults too";
  // No longer an alias of root-directory: cri-dockerd's own directory, a key of its own.
  EXPECT_NE(first.stdout_text.find("\ncri-dockerd-root-directory=\"/var/lib/cri-dockerd\""), std::string::npos)
      << first.stdout_text;
  const auto second = Run({"--config", File("printed.toml", first.stdout_text), "--print-config"});
  ASSERT_EQ(second.code, 0) << second.stderr_text;
  EXPECT_EQ(second.stdout_text, first.stdout_text);
}

TEST_F(ConfigFileTest, FlagsOverrideTheFile) {
  const std::string file = File("c.toml", "root-directory = \"/from/file\"\nlog-level = \"debug\"\n");
  const auto e = Run({"--config", file, "--root-directory", "/from/flag", "--print-config"});
  ASSERT_EQ(e.code, 0) << e.stderr_text;
  EXPECT_NE(e.stdout_text.find("root-directory=\"/from/flag\""), std::string::npos) << e.stdout_text;
  EXPECT_NE(e.stdout_text.find("log-level=\"debug\""), std::string::npos) << e.stdout_text;
}

TEST_F(ConfigFileTest, AnUnknownKeyExitsTwoNamingTheKeyAndTheFile) {
  const std::string file = File("c.toml", "log-level = \"info\"\ncontainer-runtime-endpiont = \"unix:///x.sock\"\n");
  const auto e = Run({"--config", file});
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(Lines(e.stderr_text), 1) << e.stderr_text;
  EXPECT_NE(e.stderr_text.find(file), std::string::npos) << e.stderr_text;
  EXPECT_NE(e.stderr_text.find("container-runtime-endpiont"), std::string::npos) << e.stderr_text;
}

TEST_F(ConfigFileTest, ABadValueExitsTwoNamingTheKey) {
  for (const std::string& text :
       {std::string("image-pull-progress-deadline = \"soon\"\n"), std::string("log-level = \"chatty\"\n"),
        std::string("container-runtime-endpoint = \"tcp://0.0.0.0:1\"\n")}) {
    const auto e = Run({"--config", File("c.toml", text)});
    EXPECT_EQ(e.code, 2) << text;
    EXPECT_EQ(Lines(e.stderr_text), 1) << e.stderr_text;
    EXPECT_NE(e.stderr_text.find(text.substr(0, text.find(' '))), std::string::npos) << e.stderr_text;
  }
}

TEST_F(ConfigFileTest, AMissingExplicitFileExitsTwo) {
  const std::string missing = (dir_ / "missing.toml").string();
  const auto e = Run({"--config", missing});
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(Lines(e.stderr_text), 1) << e.stderr_text;
  EXPECT_NE(e.stderr_text.find(missing), std::string::npos) << e.stderr_text;
}

}  // namespace
