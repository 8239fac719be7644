#pragma once
// Shell commands for integration-test setup and inspection only (ip, iptables, nsenter).
#include <sys/wait.h>

#include <cstdio>
#include <string>

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

}  // namespace testenv
