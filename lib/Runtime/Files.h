//===- Files.h - reading whole files in the runtime -------------*- C++ -*-===//
#ifndef TGC_RUNTIME_FILES_H
#define TGC_RUNTIME_FILES_H

#include <string>

namespace tgc::rt {

/// The bytes of `path`; false and `error` ("PATH: cannot open: REASON", or
/// "PATH: cannot read: REASON" for one that opens but cannot be read, as a
/// directory) when it cannot be read.
bool readFileBytes(const std::string &path, std::string &bytes,
                   std::string &error);

} // namespace tgc::rt

#endif // TGC_RUNTIME_FILES_H
