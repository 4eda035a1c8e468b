//===- Files.h - reading whole files in the runtime -------------*- C++ -*-===//
#ifndef TGC_RUNTIME_FILES_H
#define TGC_RUNTIME_FILES_H

#include <cstdio>
#include <functional>
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

/// Writes `path` through a temporary file beside it (this process's own)
/// renamed over it, so a reader never sees half a file: `write` fills the
/// open file and says whether it could. False and `error` on failure, with
/// nothing left behind.
bool writeFileAtomically(const std::string &path,
                         const std::function<bool(std::FILE *)> &write,
                         std::string &error);
/// The same with `bytes`.
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error);

} // namespace tgc::rt

#endif // TGC_RUNTIME_FILES_H
