#include "shim/image_ref.h"

#include <gtest/gtest.h>

namespace shim {
namespace {

struct RefCase {
  std::string input;
  std::string normalized;
  std::string familiar;
};

class ImageRefValid : public ::testing::TestWithParam<RefCase> {};

TEST_P(ImageRefValid, Normalizes) {
  auto ref = ParseImageRef(GetParam().input);
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->Normalized(), GetParam().normalized);
  EXPECT_EQ(ref->Familiar(), GetParam().familiar);
}

const std::string kDigest = "sha256:" + std::string(64, 'a');

INSTANTIATE_TEST_SUITE_P(
    Table, ImageRefValid,
    ::testing::Values(
        RefCase{"busybox", "docker.io/library/busybox:latest", "busybox:latest"},
        RefCase{"busybox:1.36", "docker.io/library/busybox:1.36", "busybox:1.36"},
        RefCase{"library/busybox", "docker.io/library/busybox:latest", "busybox:latest"},
        RefCase{"docker.io/library/busybox:1", "docker.io/library/busybox:1", "busybox:1"},
        RefCase{"user/app", "docker.io/user/app:latest", "user/app:latest"},
        RefCase{"127.0.0.1:5000/busybox", "127.0.0.1:5000/busybox:latest", "127.0.0.1:5000/busybox:latest"},
        RefCase{"localhost/a/b_c__d-e.f:T_1.0-x", "localhost/a/b_c__d-e.f:T_1.0-x", "localhost/a/b_c__d-e.f:T_1.0-x"},
        RefCase{"registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"},
        RefCase{"gcr.io/x/y@" + kDigest, "gcr.io/x/y@" + kDigest, "gcr.io/x/y@" + kDigest},
        RefCase{"busybox:1@" + kDigest, "docker.io/library/busybox:1@" + kDigest, "busybox:1@" + kDigest},
        RefCase{"[::1]:5000/img", "[::1]:5000/img:latest", "[::1]:5000/img:latest"},
        // Without its domain the path would read as registry "a.b" (found by image_ref_fuzz).
        RefCase{"docker.io/a.b/c", "docker.io/a.b/c:latest", "docker.io/a.b/c:latest"}));

class ImageRefInvalid : public ::testing::TestWithParam<std::string> {};

TEST_P(ImageRefInvalid, RejectsWithInvalidArgument) {
  auto ref = ParseImageRef(GetParam());
  ASSERT_FALSE(ref.ok()) << GetParam();
  EXPECT_EQ(ref.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ref.status().message().empty());
}

INSTANTIATE_TEST_SUITE_P(Table, ImageRefInvalid,
                         ::testing::Values("", "BusyBox", "busybox:", ":tag", "busy box", "busybox:-x",
                                           "busybox@sha256:123", "a//b", "a/b/", "-a", "a..b", "host:99999999/x",
                                           "busybox:" + std::string(129, 't'), "x@md5", "a\nb",
                                           // An empty first component (found by image_ref_fuzz).
                                           "/busybox", "/xys--uym",
                                           // Digests past sha512's 128 hex digits: their normalized
                                           // form outgrew the length bound (image_ref_fuzz).
                                           "x@a:" + std::string(129, 'b')));

TEST(ImageRef, DefaultTagIsRecorded) {
  EXPECT_TRUE(ParseImageRef("busybox")->tag_defaulted);
  EXPECT_FALSE(ParseImageRef("busybox:latest")->tag_defaulted);
  EXPECT_FALSE(ParseImageRef("busybox@" + kDigest)->tag_defaulted);
}

TEST(ImageRef, EmptyMessageSaysEmpty) {
  EXPECT_EQ(ParseImageRef("").status().message(), "image reference is empty");
}

TEST(ImageRef, LooksLikeImageId) {
  EXPECT_TRUE(LooksLikeImageId(kDigest));
  EXPECT_TRUE(LooksLikeImageId(std::string(64, 'f')));
  EXPECT_FALSE(LooksLikeImageId("busybox"));
  EXPECT_FALSE(LooksLikeImageId(std::string(63, 'f')));
  EXPECT_FALSE(LooksLikeImageId(std::string(64, 'F')));
}

}  // namespace
}  // namespace shim
