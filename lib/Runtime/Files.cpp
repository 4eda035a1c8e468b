//===- Files.cpp - reading whole files in the runtime ---------------------===//

#include "Files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>

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

bool tgc::rt::isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool tgc::rt::isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool tgc::rt::makeDirectory(const std::string &path, std::string &error) {
  if (isDirectory(path))
    return true;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    error = path + ": exists and is not a directory";
    return false;
  }
  if (::mkdir(path.c_str(), 0777) != 0 && !isDirectory(path)) {
    error = path + ": cannot create the directory: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool tgc::rt::writeFileAtomically(
    const std::string &path,
    const std::function<bool(std::FILE *)> &write, std::string &error) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  bool ok = write(f);
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot write: " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool tgc::rt::writeFileAtomically(const std::string &path,
                                  const std::string &bytes,
                                  std::string &error) {
  return writeFileAtomically(
      path,
      [&](std::FILE *f) {
        return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
      },
      error);
}
