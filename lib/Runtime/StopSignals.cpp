//===- StopSignals.cpp - SIGINT and SIGTERM end a run cleanly -------------===//

#include "StopSignals.h"

#include <atomic>
#include <csignal>
#include <cstring>

namespace {
// The first stop signal caught. The step's OpenMP threads may take it, so a
// lock-free atomic (safe in a handler, unlike a volatile sig_atomic_t read
// on another thread) records it.
std::atomic<int> caughtSignal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void onStopSignal(int signo) {
  int none = 0;
  if (caughtSignal.compare_exchange_strong(none, signo))
    return;
  // The second: the default action (the process ends by this signal),
  // delivered when the handler returns.
  std::signal(signo, SIG_DFL);
  std::raise(signo);
}
} // namespace

void tgc::rt::catchStopSignals() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = onStopSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int tgc::rt::caughtStopSignal() { return caughtSignal.load(); }
