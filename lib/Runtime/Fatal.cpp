//===- Fatal.cpp - stopping the training executable -----------------------===//

#include "Fatal.h"
#include "Distributed.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {
const char *program = "train";
} // namespace

const char *tgc::rt::programName() { return program; }

void tgc::rt::setProgramName(const char *argv0) {
  const char *slash = std::strrchr(argv0, '/');
  program = slash ? slash + 1 : argv0;
}

void tgc::rt::die(const std::string &message) {
  if (tgc_dist_size() > 1)
    std::fprintf(stderr, "%s: error (rank %d): %s\n", program, tgc_dist_rank(),
                 message.c_str());
  else
    std::fprintf(stderr, "%s: error: %s\n", program, message.c_str());
  // In a data-parallel job the others would wait for this process forever.
  tgc_dist_abort(1);
  std::exit(1);
}
