//===- TileState.h - the AMX tile state of the process ----------*- C++ -*-===//
//
// Steps compiled for a CPU with AMX run their bf16 products on tiles, which
// Linux hands out per process on request only.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TILESTATE_H
#define TGC_RUNTIME_TILESTATE_H

namespace tgc::rt {

/// Asks Linux for the AMX tile state (warns where the CPU has AMX and the
/// request fails; elsewhere a no-op).
void requestTileState();

} // namespace tgc::rt

#endif // TGC_RUNTIME_TILESTATE_H
