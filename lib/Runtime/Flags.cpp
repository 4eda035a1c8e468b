//===- Flags.cpp - walking an executable's command line -------------------===//

#include "Flags.h"
#include "Fatal.h"

#include <cerrno>
#include <cstdlib>

using namespace tgc::rt;

bool FlagCursor::advance() {
  if (++at >= argc)
    return false;
  flag = argv[at];
  hasInline = false;
  if (size_t eq = flag.find('=');
      flag.rfind("--", 0) == 0 && eq != std::string::npos) {
    inlineValue = flag.substr(eq + 1);
    flag = flag.substr(0, eq);
    hasInline = true;
  }
  return true;
}

const char *FlagCursor::value() {
  if (hasInline)
    return inlineValue.c_str();
  if (at + 1 >= argc)
    die(flag + ": missing value");
  return argv[++at];
}

void FlagCursor::noValue() const {
  if (hasInline)
    die(flag + ": takes no value");
}

int64_t tgc::rt::parseInt(const std::string &flag, const char *text,
                          int64_t min) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno || v < min)
    die(flag + ": expected an integer >= " + std::to_string(min) + ", got '" +
        text + "'");
  return v;
}
