// dockershim migrate: systemd unit files read as systemd reads them (search path,
// drop-ins, resets, continuations, specifiers) and ExecStart= turned into argv
// (quoting, escapes, prefixes, Environment= and EnvironmentFile= variables).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "shim/migrate/exec_line.h"
#include "shim/migrate/unit_file.h"
#include "tests/unit/cri_dockerd_units.h"
#include "tests/unit/temp_dir.h"

namespace shim::migrate {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testutil::TempDir;

using testutil::kCriDockerService;

TEST(UnitFileTest, SectionsKeysCommentsAndWhitespaceAroundTheEqualsSign) {
  UnitFile unit;
  unit.Add(kCriDockerService, "cri-docker.service");
  unit.Add("[Service]\n  ; a comment\n  Environment = A=1  \nnot an assignment\n", "drop-in");
  EXPECT_EQ(unit.Value("Service", "ExecStart"), "/usr/bin/cri-dockerd --container-runtime-endpoint fd://");
  EXPECT_EQ(unit.Value("Service", "Environment"), "A=1");
  EXPECT_EQ(unit.Value("Unit", "Requires"), "cri-docker.socket");
  EXPECT_EQ(unit.Value("Install", "WantedBy"), "multi-user.target");
  EXPECT_EQ(unit.Value("Service", "Nothing"), "");
  EXPECT_EQ(unit.Value("Nowhere", "ExecStart"), "");
  EXPECT_THAT(unit.sources(), ElementsAre("cri-docker.service", "drop-in"));
}

TEST(UnitFileTest, AnEmptyAssignmentResetsWhatCameBefore) {
  UnitFile unit;
  unit.Add("[Service]\nExecStart=/usr/bin/cri-dockerd\nEnvironment=A=1\nEnvironment=B=2\n", "unit");
  unit.Add("[Service]\nExecStart=\nExecStart=/usr/local/bin/cri-dockerd --log-level debug\nEnvironment=\n"
           "Environment=C=3\n",
           "drop-in");
  EXPECT_THAT(unit.Values("Service", "ExecStart"), ElementsAre("/usr/local/bin/cri-dockerd --log-level debug"));
  EXPECT_THAT(unit.Values("Service", "Environment"), ElementsAre("C=3"));
  // Without a reset, a second ExecStart= adds a command (systemd refuses two for
  // Type=notify; the reader says so).
  unit.Add("[Service]\nExecStart=/bin/true\n", "another");
  EXPECT_EQ(unit.Values("Service", "ExecStart").size(), 2u);
}

TEST(UnitFileTest, ABackslashContinuesTheLineAndCommentsMaySitInBetween) {
  UnitFile unit;
  unit.Add("[Service]\nExecStart=/usr/bin/cri-dockerd \\\n  --network-plugin=cni \\\n# --pod-cidr=10.0.0.0/8 \\\n"
           "  --cni-conf-dir=/etc/cni/net.d\nType=notify\n",
           "unit");
  EXPECT_EQ(unit.Value("Service", "ExecStart"),
            "/usr/bin/cri-dockerd  --network-plugin=cni  --cni-conf-dir=/etc/cni/net.d");
  EXPECT_EQ(unit.Value("Service", "Type"), "notify");
}

class LoadUnitTest : public ::testing::Test {
 protected:
  std::vector<std::string> Dirs() const { return {dir_ / "etc", dir_ / "run", dir_ / "lib"}; }
  TempDir dir_;
};

TEST_F(LoadUnitTest, TheFirstDirectoryHoldingTheUnitWinsAndDropInsComeByFileName) {
  dir_.Write("lib/cri-docker.service", kCriDockerService);
  dir_.Write("etc/cri-docker.service",
             "[Service]\nExecStart=/usr/local/bin/cri-dockerd --container-runtime-endpoint fd://\n");
  dir_.Write("lib/cri-docker.service.d/10-flags.conf", "[Service]\nExecStart=\nExecStart=/opt/from-lib\n");
  dir_.Write("etc/cri-docker.service.d/20-flags.conf", "[Service]\nExecStart=\nExecStart=/opt/from-etc-20\n");
  // A drop-in of the same name in an earlier directory hides the later one's.
  dir_.Write("run/cri-docker.service.d/10-flags.conf", "[Service]\nEnvironment=FROM=run\n");
  dir_.Write("etc/cri-docker.service.d/README", "[Service]\nExecStart=/not/a/drop-in\n");
  absl::StatusOr<UnitFile> unit = LoadUnit("cri-docker.service", Dirs());
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_THAT(unit->Values("Service", "ExecStart"), ElementsAre("/opt/from-etc-20"));
  EXPECT_EQ(unit->Value("Service", "Environment"), "FROM=run");
  EXPECT_THAT(unit->sources(), ElementsAre(dir_ / "etc/cri-docker.service", dir_ / "run/cri-docker.service.d/10-flags.conf",
                                           dir_ / "etc/cri-docker.service.d/20-flags.conf"));
}

TEST_F(LoadUnitTest, MissingAndMaskedUnitsAndMaskedDropIns) {
  absl::StatusOr<UnitFile> missing = LoadUnit("cri-docker.service", Dirs());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("no cri-docker.service in " + (dir_ / "etc")));

  dir_.Write("lib/cri-docker.service", kCriDockerService);
  std::filesystem::create_directories(dir_ / "etc");
  std::filesystem::create_symlink("/dev/null", dir_ / "etc/cri-docker.service");
  EXPECT_EQ(LoadUnit("cri-docker.service", Dirs()).status().code(), absl::StatusCode::kFailedPrecondition);

  std::filesystem::remove(dir_ / "etc/cri-docker.service");
  dir_.Write("lib/cri-docker.service.d/override.conf", "[Service]\nExecStart=\nExecStart=/masked\n");
  dir_.Write("etc/cri-docker.service.d/override.conf", "");  // masks lib's
  absl::StatusOr<UnitFile> unit = LoadUnit("cri-docker.service", Dirs());
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_EQ(unit->Value("Service", "ExecStart"), "/usr/bin/cri-dockerd --container-runtime-endpoint fd://");
}

TEST(SpecifiersTest, HostIndependentSpecifiersAndOthersRefused) {
  EXPECT_EQ(*ExpandSpecifiers("%t/cri-dockerd.sock", "cri-docker.socket"), "/run/cri-dockerd.sock");
  EXPECT_EQ(*ExpandSpecifiers("%S/%N %n %p %i 100%%", "cri-docker@a.service"),
            "/var/lib/cri-docker@a cri-docker@a.service cri-docker a 100%");
  EXPECT_EQ(*ExpandSpecifiers("%C %L %E %T %V", "x.service"), "/var/cache /var/log /etc /tmp /var/tmp");
  absl::StatusOr<std::string> host = ExpandSpecifiers("%H.sock", "x.socket");
  EXPECT_EQ(host.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(host.status().message()), HasSubstr("%H"));
  EXPECT_FALSE(ExpandSpecifiers("50%", "x.socket").ok());
}

TEST(SplitWordsTest, QuotesEscapesAndWhitespace) {
  EXPECT_THAT(*SplitWords("  a  b\tc "), ElementsAre("a", "b", "c"));
  EXPECT_THAT(*SplitWords(R"("a b" 'c "d"' e"f g"h)"), ElementsAre("a b", "c \"d\"", "ef gh"));
  EXPECT_THAT(*SplitWords(R"(a\ b \"c\" \x41\n "\\")"), ElementsAre("a b", "\"c\"", "A\n", "\\"));
  EXPECT_THAT(*SplitWords(R"(--x="" '')"), ElementsAre("--x=", ""));
  EXPECT_FALSE(SplitWords("\"unterminated").ok());
  EXPECT_FALSE(SplitWords("trailing\\").ok());
}

TEST(CommandLineTest, PrefixesVariablesAndTheirSplitting) {
  const Environment env = {{"FLAGS", "--network-plugin=cni  --log-level debug"},
                           {"IMAGE", "registry.example/pause:3.10"},
                           {"SPACED", "a b"},
                           {"EMPTY", ""}};
  EXPECT_THAT(*CommandLine("/usr/bin/cri-dockerd --container-runtime-endpoint fd://", env),
              ElementsAre("/usr/bin/cri-dockerd", "--container-runtime-endpoint", "fd://"));
  // $NAME alone: split into words; ${NAME} inside a word: as it is; $$: a dollar.
  EXPECT_THAT(*CommandLine("-/usr/bin/cri-dockerd $FLAGS --pod-infra-container-image=${IMAGE} $EMPTY $UNSET "
                           "--x=${SPACED} --cost=$$5 --y=$FLAGS",
                           env),
              ElementsAre("/usr/bin/cri-dockerd", "--network-plugin=cni", "--log-level", "debug",
                          "--pod-infra-container-image=registry.example/pause:3.10", "--x=a b", "--cost=$5",
                          "--y=$FLAGS"));
  // @: the next word is argv[0], not an argument.
  EXPECT_THAT(*CommandLine("@+/usr/bin/cri-dockerd cri-dockerd --log-level info", env),
              ElementsAre("/usr/bin/cri-dockerd", "--log-level", "info"));
  EXPECT_FALSE(CommandLine("", env).ok());
}

TEST(ServiceEnvironmentTest, AssignmentsThenFilesWhichWin) {
  TempDir dir;
  const std::string file = dir.Write("cri-dockerd.env",
                                     "# cri-dockerd's settings\nCRI_FLAGS=\"--network-plugin=cni --log-level=debug\"\n"
                                     "  IMAGE='registry.example/pause:3.10'\nFROM_FILE=yes\n; comment\nnot a line\n"
                                     "LONG=a\\\nb\n");
  UnitFile unit;
  unit.Add(absl::StrCat("[Service]\nEnvironment=\"CRI_FLAGS=--log-level info\" FROM_UNIT=1\nEnvironment=FROM_FILE=no\n"
                        "EnvironmentFile=",
                        file, "\nEnvironmentFile=-", dir / "missing.env", "\n"),
           "cri-docker.service");
  absl::StatusOr<Environment> env = ServiceEnvironment(unit, "cri-docker.service");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->at("CRI_FLAGS"), "--network-plugin=cni --log-level=debug");
  EXPECT_EQ(env->at("IMAGE"), "registry.example/pause:3.10");
  EXPECT_EQ(env->at("FROM_UNIT"), "1");
  EXPECT_EQ(env->at("FROM_FILE"), "yes");
  EXPECT_EQ(env->at("LONG"), "ab");

  // Without "-", a missing file stops systemd from starting the service, and us.
  unit.Add(absl::StrCat("[Service]\nEnvironmentFile=", dir / "missing.env", "\n"), "drop-in");
  absl::StatusOr<Environment> failed = ServiceEnvironment(unit, "cri-docker.service");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr(dir / "missing.env"));
}

}  // namespace
}  // namespace shim::migrate
