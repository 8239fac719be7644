#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "streaming/session_env.h"

namespace streaming {
namespace {

TEST(SessionRegistryTest, ShutdownAllAsksEverySessionAndWaitsForThem) {
  SessionRegistry registry;
  boost::asio::io_context ioc;
  int asked = 0;
  const uint64_t first = registry.Add(ioc.get_executor(), [&] { ++asked; });
  const uint64_t second = registry.Add(ioc.get_executor(), [&] { ++asked; });
  EXPECT_EQ(registry.size(), 2u);
  EXPECT_FALSE(registry.ShutdownAll(absl::ZeroDuration()));
  EXPECT_EQ(ioc.poll(), 2u);  // each shutdown runs on its session's executor
  EXPECT_EQ(asked, 2);
  registry.Remove(first);
  registry.Remove(second);
  EXPECT_TRUE(registry.ShutdownAll(absl::ZeroDuration()));
}

TEST(SessionRegistryTest, SessionThatRegistersDuringShutdownIsAskedAtOnce) {
  SessionRegistry registry;
  boost::asio::io_context ioc;
  EXPECT_TRUE(registry.ShutdownAll(absl::ZeroDuration()));
  bool asked = false;
  registry.Add(ioc.get_executor(), [&] { asked = true; });
  ioc.poll();
  EXPECT_TRUE(asked);
}

}  // namespace
}  // namespace streaming
