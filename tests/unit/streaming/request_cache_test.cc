#include "streaming/request_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace streaming {
namespace {

// A clock the test moves by hand.
struct ManualClock {
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  RequestCache::Options Options(std::size_t capacity = 1000) {
    RequestCache::Options options;
    options.capacity = capacity;
    options.now = [this] { return now; };
    return options;
  }
};

Request Exec(std::string container_id) {
  ExecRequest req;
  req.container_id = std::move(container_id);
  return req;
}

// The container of a consumed exec request, or "" when there was none.
std::string ConsumedExec(RequestCache& cache, std::string_view token) {
  std::optional<Request> req = cache.Consume(token);
  if (!req.has_value()) return "";
  const auto* exec = std::get_if<ExecRequest>(&*req);
  return exec == nullptr ? "<not an exec>" : exec->container_id;
}

TEST(RequestCacheTest, ConsumeReturnsTheInsertedRequest) {
  RequestCache cache;
  PortForwardRequest pf;
  pf.pod_sandbox_id = "sandbox";
  pf.ports = {80, 8080};
  const std::string pf_token = cache.Insert(pf);
  const std::string exec_token = cache.Insert(Exec("c1"));
  EXPECT_EQ(cache.size(), 2u);

  EXPECT_EQ(ConsumedExec(cache, exec_token), "c1");
  std::optional<Request> got = cache.Consume(pf_token);
  ASSERT_TRUE(got.has_value());
  const auto* got_pf = std::get_if<PortForwardRequest>(&*got);
  ASSERT_NE(got_pf, nullptr);
  EXPECT_EQ(got_pf->pod_sandbox_id, "sandbox");
  EXPECT_EQ(got_pf->ports, (std::vector<uint16_t>{80, 8080}));
  EXPECT_EQ(cache.size(), 0u);
}

TEST(RequestCacheTest, TokenServesOnce) {
  RequestCache cache;
  const std::string token = cache.Insert(Exec("c1"));
  EXPECT_EQ(ConsumedExec(cache, token), "c1");
  EXPECT_FALSE(cache.Consume(token).has_value());
}

TEST(RequestCacheTest, UnknownTokenIsNotFound) {
  RequestCache cache;
  const std::string token = cache.Insert(Exec("c1"));
  EXPECT_FALSE(cache.Consume("").has_value());
  EXPECT_FALSE(cache.Consume(token.substr(1)).has_value());
  EXPECT_FALSE(cache.Consume(token + "x").has_value());
  EXPECT_EQ(cache.size(), 1u);
}

TEST(RequestCacheTest, ValidAtExactlyTtlAndExpiredJustAfter) {
  ManualClock clock;
  RequestCache cache(clock.Options());
  const std::string at_ttl = cache.Insert(Exec("at-ttl"));
  const std::string after_ttl = cache.Insert(Exec("after-ttl"));
  clock.now += absl::Minutes(1);
  EXPECT_EQ(ConsumedExec(cache, at_ttl), "at-ttl");
  clock.now += absl::Nanoseconds(1);
  EXPECT_FALSE(cache.Consume(after_ttl).has_value());
}

TEST(RequestCacheTest, ConsumingAnExpiredTokenStillRemovesIt) {
  ManualClock clock;
  RequestCache cache(clock.Options());
  const std::string token = cache.Insert(Exec("c1"));
  clock.now += absl::Minutes(2);
  EXPECT_FALSE(cache.Consume(token).has_value());
  EXPECT_EQ(cache.size(), 0u);
  clock.now -= absl::Minutes(2);  // even a clock stepped back does not revive it
  EXPECT_FALSE(cache.Consume(token).has_value());
}

TEST(RequestCacheTest, InsertDropsExpiredEntries) {
  ManualClock clock;
  RequestCache cache(clock.Options());
  cache.Insert(Exec("old"));
  clock.now += absl::Seconds(30);
  const std::string young = cache.Insert(Exec("young"));
  clock.now += absl::Seconds(31);  // "old" is past its minute, "young" is not
  const std::string fresh = cache.Insert(Exec("fresh"));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(ConsumedExec(cache, young), "young");
  EXPECT_EQ(ConsumedExec(cache, fresh), "fresh");
}

TEST(RequestCacheTest, FullCacheEvictsTheOldest) {
  ManualClock clock;
  RequestCache cache(clock.Options(/*capacity=*/3));
  std::vector<std::string> tokens;
  for (const char* id : {"a", "b", "c"}) {
    tokens.push_back(cache.Insert(Exec(id)));
    clock.now += absl::Seconds(1);
  }
  // Consuming "b" frees a slot, so the next insert evicts nothing.
  EXPECT_EQ(ConsumedExec(cache, tokens[1]), "b");
  tokens.push_back(cache.Insert(Exec("d")));
  tokens.push_back(cache.Insert(Exec("e")));  // full: "a" goes
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.Consume(tokens[0]).has_value());
  EXPECT_EQ(ConsumedExec(cache, tokens[2]), "c");
  EXPECT_EQ(ConsumedExec(cache, tokens[3]), "d");
  EXPECT_EQ(ConsumedExec(cache, tokens[4]), "e");
}

TEST(RequestCacheTest, SizeNeverExceedsCapacity) {
  ManualClock clock;
  RequestCache cache(clock.Options(/*capacity=*/10));
  std::vector<std::string> tokens;
  for (int i = 0; i < 100; ++i) {
    tokens.push_back(cache.Insert(Exec(std::to_string(i))));
    EXPECT_EQ(cache.size(), std::min<std::size_t>(i + 1, 10));
  }
  // Exactly the ten newest survive.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ConsumedExec(cache, tokens[i]), i < 90 ? "" : std::to_string(i)) << i;
}

TEST(RequestCacheTest, TokensAre22Base64UrlCharacters) {
  RequestCache cache;
  for (int i = 0; i < 200; ++i) {
    const std::string token = cache.Insert(Exec("c"));
    ASSERT_EQ(token.size(), 22u) << token;
    EXPECT_EQ(token.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos)
        << token;
  }
}

TEST(RequestCacheTest, TokensAreUnique) {
  RequestCache::Options options;
  options.capacity = 20000;
  RequestCache cache(options);
  std::set<std::string> tokens;
  for (int i = 0; i < 20000; ++i) tokens.insert(cache.Insert(Exec("c")));
  EXPECT_EQ(tokens.size(), 20000u);
  EXPECT_EQ(cache.size(), 20000u);
}

TEST(RequestCacheTest, ConcurrentInsertsAndConsumes) {
  constexpr int kThreads = 8, kPerThread = 2000;
  RequestCache::Options options;
  options.capacity = kThreads * kPerThread;
  RequestCache cache(options);

  // Each thread inserts and consumes its own requests, and leaves every other one.
  std::vector<std::vector<std::string>> kept(kThreads);
  std::atomic<int> served{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = std::to_string(t) + "/" + std::to_string(i);
        const std::string token = cache.Insert(Exec(id));
        if (i % 2 == 0) {
          kept[t].push_back(token);
        } else if (ConsumedExec(cache, token) == id) {
          ++served;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(served.load(), kThreads * kPerThread / 2);
  EXPECT_EQ(cache.size(), static_cast<std::size_t>(kThreads * kPerThread / 2));

  // Then all threads race to consume every kept token: each serves exactly once.
  threads.clear();
  std::atomic<int> won{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (const std::vector<std::string>& tokens : kept) {
        for (const std::string& token : tokens) {
          if (cache.Consume(token).has_value()) ++won;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(won.load(), kThreads * kPerThread / 2);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace streaming
