// Image references on arbitrary bytes.
// - A reference that parses normalizes to one that parses to the same parts (the
//   normal form is a fixed point), and its familiar form reads back to it too.
// - Its domain and path are non-empty, it has a tag or a digest, and a digest is
//   "<algorithm>:<at least 32 hex>" (64 for sha256).
// - Anything refused is INVALID_ARGUMENT.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "shim/image_ref.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

bool SameParts(const shim::ImageRef& a, const shim::ImageRef& b) {
  return a.domain == b.domain && a.path == b.path && a.tag == b.tag && a.digest == b.digest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto ref = shim::ParseImageRef(text);
  shim::LooksLikeImageId(text);
  if (!ref.ok()) return Check(ref.status().code() == absl::StatusCode::kInvalidArgument), 0;
  Check(!ref->domain.empty() && !ref->path.empty());
  Check(!ref->tag.empty() || !ref->digest.empty());
  if (!ref->digest.empty()) {
    const std::size_t colon = ref->digest.find(':');
    Check(colon != std::string::npos && colon > 0 && ref->digest.size() - colon - 1 >= 32);
    for (char c : ref->digest.substr(colon + 1)) Check(absl::ascii_isxdigit(static_cast<unsigned char>(c)));
    if (ref->digest.starts_with("sha256:")) Check(ref->digest.size() == 7 + 64);
  }
  const auto normal = shim::ParseImageRef(ref->Normalized());
  Check(normal.ok() && SameParts(*normal, *ref) && normal->Normalized() == ref->Normalized());
  const auto familiar = shim::ParseImageRef(ref->Familiar());
  Check(familiar.ok() && familiar->Normalized() == ref->Normalized());
  return 0;
}
