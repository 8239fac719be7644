#pragma once
// Image references as Docker and Kubernetes write them
// ([domain[:port]/]path[:tag][@digest]), validated and normalized without I/O.
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace shim {

struct ImageRef {
  std::string domain;  // "docker.io", "127.0.0.1:5000"
  std::string path;    // "library/busybox"
  std::string tag;     // empty when only a digest was given
  std::string digest;  // "sha256:<hex>" or empty
  bool tag_defaulted = false;  // no tag or digest was written; tag is "latest"

  // "docker.io/library/busybox:latest", "127.0.0.1:5000/x@sha256:..."
  std::string Normalized() const;
  // "docker.io/library/busybox"
  std::string Repository() const;
  // Docker's short form: "busybox:latest", "127.0.0.1:5000/x:1".
  std::string Familiar() const;
};

// Parses and normalizes; a reference without tag or digest gets "latest".
// INVALID_ARGUMENT with the reason for an empty or malformed reference.
absl::StatusOr<ImageRef> ParseImageRef(absl::string_view text);

// True for "sha256:<64 hex>" and bare 64-hex image IDs.
bool LooksLikeImageId(absl::string_view text);
// 64 lowercase hex digits: the form of Docker's image and container IDs.
bool IsDockerId(absl::string_view text);

}  // namespace shim
