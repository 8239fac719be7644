#pragma once
// The log copier's source for json-file containers in the integration tests: Docker's
// files ("true", the default) or always the logs API ("false"); the log tests run once
// each way (DOCKERSHIM_TEST_LOGS_FROM_FILES=false).
#include <string>

#include "tests/integration/env.h"

namespace testenv {

inline bool LogsFromFiles() { return Get("DOCKERSHIM_TEST_LOGS_FROM_FILES", "true") != "false"; }
inline std::string LogsFromFilesFlag() {
  return std::string("--container-logs-from-files=") + (LogsFromFiles() ? "true" : "false");
}

}  // namespace testenv
