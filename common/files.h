#pragma once
// Whole-file reads and crash-safe writes.
#include <sys/types.h>

#include <optional>
#include <string>

#include "absl/status/status.h"

namespace common {

// Writes `data` to `path` (its directories created when missing) so that readers see
// the old file or the whole new one, also after a crash: a temp file
// (<path>.tmp.XXXXXX, or with `hidden_temp` .<file name>.XXXXXX: a name that readers of
// the directory skipping dot files never take for one of theirs) with `mode`, fsync,
// rename, fsync of the directory.
absl::Status WriteFileAtomically(const std::string& path, const std::string& data, mode_t mode = 0600,
                                 bool hidden_temp = false);

// The file's bytes; nullopt when it cannot be read.
std::optional<std::string> ReadWholeFile(const std::string& path);

}  // namespace common
