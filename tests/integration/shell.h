#pragma once
// Shell commands for integration-test setup and inspection only (ip, iptables, nsenter).
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"

#include "tests/integration/env.h"

namespace testenv {

// Runs `command` and returns its stdout; stderr is discarded. `docker` in it talks to the
// engine under test.
inline std::string Sh(const std::string& command, int* exit_code = nullptr) {
  std::string out;
  const std::string shell = "export DOCKER_HOST='" + DockerEndpoint() + "'; " + command + " 2>/dev/null";
  FILE* p = ::popen(shell.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = ::pclose(p);
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

inline bool ShOk(const std::string& command) {
  int code = -1;
  Sh(command, &code);
  return code == 0;
}

// A command's output without the surrounding whitespace (the newline).
inline std::string Trimmed(std::string s) {
  absl::StripAsciiWhitespace(&s);
  return s;
}

// Polls `done` every 200 ms until it holds or `timeout` passed; whether it held.
inline bool WaitUntil(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

}  // namespace testenv
