#include "shim/image_ref.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace shim {
namespace {

bool IsLowerAlnum(char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c); }

// The first component of a name with more than one is a registry host when it looks
// like one (Docker's rule): a '.', a ':', "localhost" or an uppercase letter.
bool ReadsAsDomain(absl::string_view first) {
  return absl::StrContains(first, ".") || absl::StrContains(first, ":") || first == "localhost" ||
         std::any_of(first.begin(), first.end(), absl::ascii_isupper);
}

// One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*
bool ValidPathComponent(absl::string_view c) {
  if (c.empty() || !IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) return false;
  for (size_t i = 0; i < c.size();) {
    if (IsLowerAlnum(c[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    if (c[i] == '.') {
      j = i + 1;
    } else if (c[i] == '_') {
      j = i + 1;
      if (j < c.size() && c[j] == '_') ++j;
    } else if (c[i] == '-') {
      while (j < c.size() && c[j] == '-') ++j;
    } else {
      return false;
    }
    if (j >= c.size() || !IsLowerAlnum(c[j])) return false;
    i = j;
  }
  return true;
}

bool ValidHostLabel(absl::string_view l) {
  if (l.empty() || !absl::ascii_isalnum(l.front()) || !absl::ascii_isalnum(l.back())) return false;
  for (char ch : l)
    if (!absl::ascii_isalnum(ch) && ch != '-') return false;
  return true;
}

bool ValidDomain(absl::string_view d) {
  absl::string_view host = d;
  if (auto colon = d.rfind(':'); colon != absl::string_view::npos && !absl::EndsWith(d, "]")) {
    absl::string_view port = d.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char ch : port)
      if (!absl::ascii_isdigit(ch)) return false;
    host = d.substr(0, colon);
  }
  if (absl::StartsWith(host, "[") && absl::EndsWith(host, "]")) {  // IPv6 literal
    for (char ch : host.substr(1, host.size() - 2))
      if (!absl::ascii_isxdigit(ch) && ch != ':') return false;
    return host.size() > 2;
  }
  for (absl::string_view label : absl::StrSplit(host, '.'))
    if (!ValidHostLabel(label)) return false;
  return true;
}

bool ValidTag(absl::string_view t) {
  if (t.empty() || t.size() > 128) return false;
  if (!(absl::ascii_isalnum(t[0]) || t[0] == '_')) return false;
  for (char ch : t)
    if (!(absl::ascii_isalnum(ch) || ch == '_' || ch == '.' || ch == '-')) return false;
  return true;
}

bool ValidDigest(absl::string_view d) {
  auto colon = d.find(':');
  if (colon == absl::string_view::npos || colon == 0) return false;
  absl::string_view algo = d.substr(0, colon), hex = d.substr(colon + 1);
  for (char ch : algo)
    if (!(absl::ascii_isalnum(ch) || ch == '-' || ch == '_' || ch == '+' || ch == '.')) return false;
  // sha512's 128 hex digits are the longest digest in use.
  if (algo.size() > 32 || hex.size() < 32 || hex.size() > 128) return false;
  for (char ch : hex)
    if (!absl::ascii_isxdigit(ch)) return false;
  if (algo == "sha256" && hex.size() != 64) return false;
  return true;
}

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("invalid image reference \"", text, "\": ", why));
}

}  // namespace

std::string ImageRef::Repository() const { return absl::StrCat(domain, "/", path); }

std::string ImageRef::Normalized() const {
  std::string out = Repository();
  if (!tag.empty()) absl::StrAppend(&out, ":", tag);
  if (!digest.empty()) absl::StrAppend(&out, "@", digest);
  return out;
}

std::string ImageRef::Familiar() const {
  std::string name = Repository();
  // Docker Hub's domain goes, unless the path's first component would then read as a
  // registry ("docker.io/a.b/c" is not "a.b/c").
  const size_t slash = path.find('/');
  if (domain == "docker.io" && (slash == std::string::npos || !ReadsAsDomain(absl::string_view(path).substr(0, slash)))) {
    name = absl::StartsWith(path, "library/") && path.find('/', 8) == std::string::npos ? path.substr(8) : path;
  }
  if (!tag.empty()) absl::StrAppend(&name, ":", tag);
  if (!digest.empty()) absl::StrAppend(&name, "@", digest);
  return name;
}

bool LooksLikeImageId(absl::string_view text) {
  if (absl::StartsWith(text, "sha256:")) text.remove_prefix(7);
  return IsDockerId(text);
}

bool IsDockerId(absl::string_view text) {
  if (text.size() != 64) return false;
  for (char ch : text)
    if (!absl::ascii_isxdigit(ch) || absl::ascii_isupper(ch)) return false;
  return true;
}

absl::StatusOr<ImageRef> ParseImageRef(absl::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("image reference is empty");
  // A guard only: the parts' own bounds (255 + tag 128 + digest 161) hold any valid
  // reference, and also its normalized form, to fewer than this.
  if (text.size() > 1024) return Invalid(text.substr(0, 64), "longer than 1024 characters");
  for (char ch : text)
    if (absl::ascii_isspace(ch) || absl::ascii_iscntrl(ch)) return Invalid(text, "contains whitespace");

  ImageRef ref;
  absl::string_view rest = text;
  if (auto at = rest.find('@'); at != absl::string_view::npos) {
    ref.digest = std::string(rest.substr(at + 1));
    if (!ValidDigest(ref.digest)) return Invalid(text, "the digest is not of the form sha256:<64 hex digits>");
    rest = rest.substr(0, at);
  }
  auto last_slash = rest.rfind('/');
  if (auto colon = rest.rfind(':'); colon != absl::string_view::npos &&
                                     (last_slash == absl::string_view::npos || colon > last_slash)) {
    ref.tag = std::string(rest.substr(colon + 1));
    if (!ValidTag(ref.tag))
      return Invalid(text, "the tag must be 1-128 of [A-Za-z0-9_.-] and not start with '.' or '-'");
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return Invalid(text, "the repository name is empty");

  std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
  absl::string_view first = parts.front();
  bool has_domain = parts.size() > 1 && ReadsAsDomain(first);
  if (has_domain) {
    if (!ValidDomain(first)) return Invalid(text, absl::StrCat("\"", first, "\" is not a valid registry host"));
    ref.domain = std::string(first);
    parts.erase(parts.begin());
  } else {
    ref.domain = "docker.io";
  }
  for (absl::string_view c : parts) {
    if (!ValidPathComponent(c)) {
      return Invalid(text, absl::StrCat("\"", c,
                                        "\" is not a valid repository name component (lowercase letters, digits "
                                        "and single separators . _ __ -)"));
    }
  }
  ref.path = absl::StrJoin(parts, "/");
  if (ref.domain == "docker.io" && parts.size() == 1) ref.path = "library/" + ref.path;
  if (ref.Repository().size() > 255) return Invalid(text, "the repository name is longer than 255 characters");
  if (ref.tag.empty() && ref.digest.empty()) {
    ref.tag = "latest";
    ref.tag_defaulted = true;
  }
  return ref;
}

}  // namespace shim
