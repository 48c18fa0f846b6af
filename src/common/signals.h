#pragma once
// Process signal handling for the binaries: SIGINT and SIGTERM are blocked in every thread
// (call before starting any) and awaited by the main thread (the gateway's SIGHUP too); SIGPIPE is
// ignored so a closed peer is an error code, not a crash.

#include <signal.h>

#include <chrono>

namespace infergrid {

// With `reload`, SIGHUP is blocked and awaited too.
inline sigset_t BlockStopSignals(bool reload = false) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (reload) sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

// Blocks until a signal of `set` arrives; returns it.
inline int WaitForStopSignal(const sigset_t& set) {
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

// Like WaitForStopSignal, but gives up after `timeout`: returns 0 then.
template <typename Duration>
inline int WaitForSignalFor(const sigset_t& set, Duration timeout) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  int sig = sigtimedwait(&set, nullptr, &ts);
  return sig < 0 ? 0 : sig;
}

}  // namespace infergrid
