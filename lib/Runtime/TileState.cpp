//===- TileState.cpp - the AMX tile state of the process ------------------===//

#include "TileState.h"
#include "Fatal.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

/// Linux hands out the AMX tile state only on request, per process: a step
/// compiled for a CPU with AMX runs its bf16 products on tiles (and would
/// die on its first tile instruction without this). Elsewhere the request
/// fails harmlessly and such a step is never compiled.
void tgc::rt::requestTileState() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0 &&
      __builtin_cpu_supports("amx-tile"))
    std::fprintf(stderr,
                 "%s: warning: Linux refused the AMX tile state (%s): a step "
                 "compiled for this CPU with --precision=bf16-mixed stops on "
                 "its first tile instruction; compile it with "
                 "--mcpu=x86-64-v4 instead\n",
                 programName(), std::strerror(errno));
#endif
}
