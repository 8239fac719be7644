#include "shim/engine_features.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shim {
namespace {

using json = nlohmann::json;

struct FeaturesCase {
  std::string name;
  std::string api_version;  // negotiated
  json cdi_spec_dirs;       // /info CDISpecDirs; null: absent
  bool annotations, recursive_read_only, image_mounts, cdi;
};

class FeaturesForTest : public ::testing::TestWithParam<FeaturesCase> {};

TEST_P(FeaturesForTest, Table) {
  const FeaturesCase& tc = GetParam();
  dockerclient::SystemInfo info;
  info.server_version = "99.0.0";
  info.raw = json::object();
  if (!tc.cdi_spec_dirs.is_null()) info.raw["CDISpecDirs"] = tc.cdi_spec_dirs;
  const EngineFeatures f = FeaturesFor(tc.api_version, info);
  EXPECT_EQ(f.api_version, tc.api_version);
  EXPECT_EQ(f.engine_version, "99.0.0");
  EXPECT_EQ(f.annotations, tc.annotations);
  EXPECT_EQ(f.recursive_read_only, tc.recursive_read_only);
  EXPECT_EQ(f.image_mounts, tc.image_mounts);
  EXPECT_EQ(f.cdi, tc.cdi);
}

const json kDirs = json::array({"/etc/cdi", "/var/run/cdi"});
const json kNoDirs = json::array();  // what Docker 25-28.1 report with CDI off

INSTANTIATE_TEST_SUITE_P(
    Versions, FeaturesForTest,
    ::testing::Values(
        // Docker 20.10: nothing; spec dirs (which it would never report) do not make CDI.
        FeaturesCase{"v1_41", "1.41", json(), false, false, false, false},
        FeaturesCase{"v1_41_dirs", "1.41", kDirs, false, false, false, false},
        FeaturesCase{"v1_42", "1.42", kDirs, false, false, false, false},  // Docker 23
        FeaturesCase{"v1_43", "1.43", kDirs, true, false, false, false},   // Docker 24: annotations
        // Docker 25: rro, and CDI where enabled.
        FeaturesCase{"v1_44", "1.44", kNoDirs, true, true, false, false},
        FeaturesCase{"v1_44_cdi", "1.44", kDirs, true, true, false, true},
        FeaturesCase{"v1_45", "1.45", kNoDirs, true, true, false, false},  // Docker 26.1, CDI off
        FeaturesCase{"v1_45_cdi", "1.45", kDirs, true, true, false, true},
        FeaturesCase{"v1_47_absent", "1.47", json(), true, true, false, false},
        FeaturesCase{"v1_47_cdi", "1.47", kDirs, true, true, false, true},
        // Docker 28: image mounts.
        FeaturesCase{"v1_48", "1.48", kNoDirs, true, true, true, false},
        FeaturesCase{"v1_48_cdi", "1.48", kDirs, true, true, true, true},
        FeaturesCase{"v1_51_cdi", "1.51", kDirs, true, true, true, true},  // Docker 28.5, CDI on by default
        FeaturesCase{"v1_51_no_cdi", "1.51", kNoDirs, true, true, true, false},
        FeaturesCase{"v1_51_dirs_not_a_list", "1.51", json("/etc/cdi"), true, true, true, false},
        FeaturesCase{"unparseable", "x", kDirs, false, false, false, false}),
    [](const auto& info) { return info.param.name; });

TEST(RuntimeSupportsRro, FromTheRuntimesOciFeatures) {
  dockerclient::SystemInfo info;
  info.default_runtime = "runc";
  info.raw = json::parse(R"({"Runtimes": {
      "runc": {"path": "runc", "status": {"org.opencontainers.runtime-spec.features":
               "{\"mountOptions\":[\"ro\",\"rro\",\"rbind\"]}"}},
      "crun": {"path": "crun", "status": {"org.opencontainers.runtime-spec.features":
               "{\"mountOptions\":[\"ro\",\"rbind\"]}"}},
      "broken": {"path": "x", "status": {"org.opencontainers.runtime-spec.features": "{not json"}},
      "runsc": {"path": "/usr/bin/runsc"}}})");
  EXPECT_TRUE(RuntimeSupportsRro(info, "runc"));
  EXPECT_TRUE(RuntimeSupportsRro(info, ""));  // the default runtime
  EXPECT_FALSE(RuntimeSupportsRro(info, "crun"));
  EXPECT_FALSE(RuntimeSupportsRro(info, "broken"));
  EXPECT_FALSE(RuntimeSupportsRro(info, "runsc"));  // Docker: "OCI features struct is not available"
  EXPECT_FALSE(RuntimeSupportsRro(info, "absent"));
  info.raw = json::object();  // Docker 20.10 reports no runtime status
  EXPECT_FALSE(RuntimeSupportsRro(info, "runc"));
}

TEST(EngineName, NamesVersionAndApi) {
  EngineFeatures f;
  f.api_version = "1.41";
  f.engine_version = "20.10.24";
  EXPECT_EQ(EngineName(f), "Docker Engine 20.10.24 (API 1.41)");
  f.engine_version.clear();
  EXPECT_EQ(EngineName(f), "Docker Engine (API 1.41)");
}

}  // namespace
}  // namespace shim
