//===- Fatal.h - stopping the training executable ---------------*- C++ -*-===//
//
// Every error of the training executable ends here: one line naming the
// program (and the rank in a data-parallel job), then the whole job stops.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_FATAL_H
#define TGC_RUNTIME_FATAL_H

#include <string>

namespace tgc::rt {

/// The executable's name in messages ("train" until main sets it).
const char *programName();
void setProgramName(const char *argv0);

/// Prints "PROGRAM: error: MESSAGE" and stops every process of the job.
[[noreturn]] void die(const std::string &message);

} // namespace tgc::rt

#endif // TGC_RUNTIME_FATAL_H
