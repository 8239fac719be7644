// The config file on a CLI11 app like main.cc's: keys are the long flag names.
#include "shim/config/config_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/unit/stats_fake_tree.h"

namespace shim::config {
namespace {

struct App {
  explicit App(const std::string& default_path) {
    app.add_option("--docker-endpoint", endpoint)->capture_default_str();
    app.add_option("--root-directory", root)->capture_default_str();
    app.add_option("--cri-dockerd-root-directory", cri_dockerd_root)->capture_default_str();
    app.add_option("--streaming-tls-cert", cert);
    AddConfigOptions(app, &print, default_path);
  }
  // Parses; "" or the error as an operator reads it.
  std::string Parse(std::vector<std::string> args) {
    args.insert(args.begin(), "dockershim");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return DescribeParseError(app, e);
    }
    return "";
  }
  CLI::App app{"test", "dockershim"};
  std::string endpoint = "unix:///var/run/docker.sock", root = "/var/lib/dockershim",
              cri_dockerd_root = "/var/lib/cri-dockerd", cert;
  bool print = false;
};

class ConfigFileTest : public ::testing::Test {
 protected:
  std::string File(const std::string& name, const std::string& text) {
    tree_.Write(name, text);
    return tree_.Path(name);
  }
  testutil::FakeTree tree_;
};

TEST_F(ConfigFileTest, AnAbsentDefaultFileIsFine) {
  App a(tree_.Path("absent.toml"));
  EXPECT_EQ(a.Parse({}), "");
  EXPECT_EQ(a.endpoint, "unix:///var/run/docker.sock");
}

TEST_F(ConfigFileTest, ThePresentDefaultFileIsRead) {
  App a(File("config.toml", "root-directory = \"/srv/shim\"\n"));
  EXPECT_EQ(a.Parse({}), "");
  EXPECT_EQ(a.root, "/srv/shim");
}

TEST_F(ConfigFileTest, FlagsWinOverTheFile) {
  const std::string file = File("c.toml", "docker-endpoint = \"unix:///file.sock\"\nroot-directory = \"/from/file\"\n");
  App a(tree_.Path("absent.toml"));
  EXPECT_EQ(a.Parse({"--config", file, "--docker-endpoint", "unix:///flag.sock"}), "");
  EXPECT_EQ(a.endpoint, "unix:///flag.sock");
  EXPECT_EQ(a.root, "/from/file");
}

TEST_F(ConfigFileTest, AnUnknownKeyNamesTheKeyAndTheFile) {
  const std::string file = File("c.toml", "docker-endpoint = \"unix:///x.sock\"\nno-such-key = 1\n");
  App a(tree_.Path("absent.toml"));
  const std::string error = a.Parse({"--config", file});
  EXPECT_NE(error.find(file), std::string::npos) << error;
  EXPECT_NE(error.find("unknown key \"no-such-key\""), std::string::npos) << error;
}

TEST_F(ConfigFileTest, AnUnknownKeyInTheDefaultFileNamesThatFile) {
  const std::string file = File("default.toml", "log-levl = \"debug\"\n");
  App a(file);
  const std::string error = a.Parse({});
  EXPECT_NE(error.find(file + ": unknown key \"log-levl\""), std::string::npos) << error;
}

TEST_F(ConfigFileTest, AMissingExplicitFileIsAnError) {
  App a(tree_.Path("absent.toml"));
  const std::string error = a.Parse({"--config", tree_.Path("missing.toml")});
  EXPECT_NE(error.find(tree_.Path("missing.toml")), std::string::npos) << error;
}

TEST_F(ConfigFileTest, TheEffectiveConfigReadsBackToItself) {
  const std::string file = File("c.toml", "root-directory = \"/from/file\"\n");
  App first(tree_.Path("absent.toml"));
  ASSERT_EQ(first.Parse({"--config", file, "--streaming-tls-cert", "/etc/cert.pem"}), "");
  const std::string printed = EffectiveConfig(first.app);
  EXPECT_NE(printed.find("docker-endpoint"), std::string::npos) << printed;  // defaults too
  EXPECT_EQ(printed.find("print-config="), std::string::npos) << printed;
  EXPECT_EQ(printed.find("\nconfig="), std::string::npos) << printed;

  App second(tree_.Path("absent.toml"));
  ASSERT_EQ(second.Parse({"--config", File("printed.toml", printed)}), "");
  EXPECT_EQ(second.root, "/from/file");
  EXPECT_EQ(second.cert, "/etc/cert.pem");
  EXPECT_EQ(EffectiveConfig(second.app), printed);
}

}  // namespace
}  // namespace shim::config
