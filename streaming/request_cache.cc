#include "streaming/request_cache.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "common/log.h"

namespace streaming {
namespace {

constexpr std::size_t kTokenBytes = 16;

// 128 random bits make a guessed or colliding token negligible, so there is no
// uniqueness retry. A token that cannot be random must not be issued at all.
std::string NewToken() {
  char bytes[kTokenBytes];
  std::size_t filled = 0;
  while (filled < kTokenBytes) {
    const ssize_t n = getrandom(bytes + filled, kTokenBytes - filled, 0);
    if (n > 0) {
      filled += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      LOG_ERROR << "getrandom: " << std::strerror(errno) << "; cannot issue streaming tokens";
      std::abort();
    }
  }
  return absl::WebSafeBase64Escape(absl::string_view(bytes, kTokenBytes));
}

}  // namespace

RequestCache::RequestCache(Options options) : options_(std::move(options)) {}

std::string RequestCache::Insert(Request req) {
  std::string token = NewToken();
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = options_.now();
  DropExpired(now);
  if (!entries_.empty() && entries_.size() >= options_.capacity) {
    by_token_.erase(entries_.front().token);
    entries_.pop_front();
  }
  entries_.push_back(Entry{token, std::move(req), now + options_.ttl});
  by_token_.emplace(token, std::prev(entries_.end()));
  return token;
}

std::optional<Request> RequestCache::Consume(std::string_view token) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto found = by_token_.find(token);
  if (found == by_token_.end()) return std::nullopt;
  Entry entry = std::move(*found->second);
  entries_.erase(found->second);
  by_token_.erase(found);
  // Valid up to and including its expiry instant, like the Go cache (Now().After).
  if (options_.now() > entry.expires) return std::nullopt;
  return std::move(entry.request);
}

std::size_t RequestCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void RequestCache::DropExpired(absl::Time now) {
  // Entries are oldest first with one TTL, so the expired ones form a prefix.
  while (!entries_.empty() && now > entries_.front().expires) {
    by_token_.erase(entries_.front().token);
    entries_.pop_front();
  }
}

}  // namespace streaming
