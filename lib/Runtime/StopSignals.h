//===- StopSignals.h - SIGINT and SIGTERM end a run cleanly -----*- C++ -*-===//
//
// The training and generation executables stop after their step (or token)
// in progress when SIGINT or SIGTERM arrives; a second signal ends the
// process at once, by that signal.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_STOPSIGNALS_H
#define TGC_RUNTIME_STOPSIGNALS_H

namespace tgc::rt {

/// From here on, SIGINT and SIGTERM only record the signal (the loop stops
/// after its step); a second one ends the process at once, by that signal.
void catchStopSignals();
/// The first SIGINT or SIGTERM this process caught, or 0.
int caughtStopSignal();

} // namespace tgc::rt

#endif // TGC_RUNTIME_STOPSIGNALS_H
