#include "shim/image_convert.h"

#include <gtest/gtest.h>

namespace shim {
namespace {

struct UserCase {
  std::string user;
  std::optional<int64_t> uid;
  std::string username;
};

class ImageUserTable : public ::testing::TestWithParam<UserCase> {};

TEST_P(ImageUserTable, Parses) {
  ImageUser u = ParseImageUser(GetParam().user);
  EXPECT_EQ(u.uid, GetParam().uid) << GetParam().user;
  EXPECT_EQ(u.username, GetParam().username) << GetParam().user;
}

INSTANTIATE_TEST_SUITE_P(Table, ImageUserTable,
                         ::testing::Values(UserCase{"", std::nullopt, ""}, UserCase{"1002", 1002, ""},
                                           UserCase{"0", 0, ""}, UserCase{"www-data", std::nullopt, "www-data"},
                                           UserCase{"1003:100", 1003, ""},
                                           UserCase{"www-data:www-data", std::nullopt, "www-data"},
                                           UserCase{"www-data:100", std::nullopt, "www-data"},
                                           UserCase{":100", std::nullopt, ""}));

TEST(ImageConvert, InspectToCriImage) {
  dockerclient::ImageInspect in;
  in.id = "sha256:abc";
  in.repo_tags = {"busybox:latest", "<none>:<none>"};
  in.repo_digests = {"busybox@sha256:def", "<none>@<none>"};
  in.size = 1234;
  in.config.user = "1003:100";
  runtime::v1::Image out = ToCriImage(in, /*pinned=*/true);
  EXPECT_EQ(out.id(), "sha256:abc");
  ASSERT_EQ(out.repo_tags_size(), 1);
  EXPECT_EQ(out.repo_tags(0), "busybox:latest");
  ASSERT_EQ(out.repo_digests_size(), 1);
  EXPECT_EQ(out.size(), 1234u);
  EXPECT_TRUE(out.has_uid());
  EXPECT_EQ(out.uid().value(), 1003);
  EXPECT_TRUE(out.pinned());
  EXPECT_EQ(out.spec().image(), "sha256:abc");
}

TEST(ImageConvert, SummaryHasNoUser) {
  dockerclient::ImageSummary in;
  in.id = "sha256:abc";
  in.size = -1;
  runtime::v1::Image out = ToCriImage(in, false);
  EXPECT_FALSE(out.has_uid());
  EXPECT_EQ(out.username(), "");
  EXPECT_EQ(out.size(), 0u);
}

TEST(ImageConvert, PlaceholdersAndBareDigestsAreNoReferences) {
  const std::string digest = "sha256:f66700fe359a3d0af3edb6261e552f59787432f8d44953673e65f09432d39cec";
  EXPECT_EQ(RealReferences({"<none>:<none>", "<none>@<none>", digest, "busybox:1.0", "busybox@" + digest}),
            (std::vector<std::string>{"busybox:1.0", "busybox@" + digest}));
  // Docker 28.5's containerd store lists a pulled image whose tags are gone so.
  dockerclient::ImageSummary dangling;
  dangling.id = digest;
  dangling.repo_digests = {digest};
  EXPECT_EQ(ToCriImage(dangling, false).repo_digests_size(), 0);
}

}  // namespace
}  // namespace shim
