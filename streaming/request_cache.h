#pragma once
// The one-time tokens behind the URLs that Exec, Attach and PortForward return.
// A token is 128 random bits (22 base64url characters), serves once, and expires
// after a minute; when the cache is full the oldest request gives way.
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "streaming/runtime.h"

namespace streaming {

class RequestCache {
 public:
  struct Options {
    absl::Duration ttl = absl::Minutes(1);
    std::size_t capacity = 1000;
    std::function<absl::Time()> now = [] { return absl::Now(); };
  };

  explicit RequestCache(Options options);
  RequestCache() : RequestCache(Options()) {}

  // Stores `req` and returns its token. Expired entries are dropped first.
  std::string Insert(Request req);
  // The request for `token`, removed (single use, whatever the caller does with it);
  // nullopt when the token is unknown, used or expired.
  std::optional<Request> Consume(std::string_view token);
  std::size_t size() const;

 private:
  struct Entry {
    std::string token;
    Request request;
    absl::Time expires;
  };
  void DropExpired(absl::Time now);  // mu_ held

  const Options options_;
  mutable std::mutex mu_;
  std::list<Entry> entries_;                                                  // oldest first
  std::map<std::string, std::list<Entry>::iterator, std::less<>> by_token_;  // into entries_
};

}  // namespace streaming
