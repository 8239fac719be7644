#pragma once
// SIGTERM/SIGINT handling kept out of files that include the CRI protos: the
// proto's Signal enum has values named like the <signal.h> macros.

namespace common {

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts
// later, and ignores SIGPIPE. Call before starting any thread.
void BlockStopSignals();
// Waits for SIGTERM or SIGINT; returns its name.
const char* WaitForStopSignal();

}  // namespace common
