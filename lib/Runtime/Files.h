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

bool isDirectory(const std::string &path);
bool isFile(const std::string &path);

/// Creates the directory `path` unless it is one; false and `error` when
/// it cannot (its parent missing, or a file of that name).
bool makeDirectory(const std::string &path, std::string &error);

/// Writes `bytes` to `path` through a temporary file renamed over it, so a
/// reader never sees half a file; false and `error` on failure.
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error);

} // namespace tgc::rt

#endif // TGC_RUNTIME_FILES_H
