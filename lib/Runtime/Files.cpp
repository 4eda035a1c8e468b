//===- Files.cpp - reading whole files in the runtime ---------------------===//

#include "Files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

bool tgc::rt::readFileBytes(const std::string &path, std::string &bytes,
                            std::string &error) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  // A file that opens but cannot be read (a directory: EISDIR) is an
  // error, not an empty file.
  bytes.clear();
  char chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    bytes.append(chunk, n);
  int readError = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (readError) {
    error = path + ": cannot read: " + std::strerror(readError);
    bytes.clear();
    return false;
  }
  return true;
}
