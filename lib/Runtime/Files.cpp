//===- Files.cpp - reading whole files in the runtime ---------------------===//

#include "Files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

bool tgc::rt::readFileBytes(const std::string &path, std::string &bytes,
                            std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  bytes = ss.str();
  return true;
}
