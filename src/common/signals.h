#pragma once
// Process signal handling for the binaries: SIGINT and SIGTERM are blocked in every thread
// (call before starting any) and awaited by the main thread; SIGPIPE is ignored so a closed
// peer is an error code, not a crash.

#include <signal.h>

namespace infergrid {

inline sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

// Blocks until SIGINT or SIGTERM arrives; returns it.
inline int WaitForStopSignal(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace infergrid
