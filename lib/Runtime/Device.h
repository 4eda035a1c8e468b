//===- Device.h - where the compiled step's buffers live --------*- C++ -*-===//
//
// The training loop (Main.cpp) keeps a host copy of every buffer and hands
// the compiled step device pointers. On the CPU the device is host memory
// and the two are the same pointer (HostDevice.cpp: nothing is copied);
// the CUDA runtime (CUDA/CUDARuntime.cpp) defines the same functions over
// the driver API and is linked first, whole, in GPU executables.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_DEVICE_H
#define TGC_RUNTIME_DEVICE_H

#include <cstddef>

extern "C" {
/// 1 when device pointers are host pointers (no copies needed).
int tgc_device_is_host(void);
/// A zero-filled device buffer of `bytes`, or null with `host` when the
/// device is the host (the caller's host buffer is used as is).
void *tgc_device_alloc(size_t bytes, void *host);
void tgc_device_free(void *device);
void tgc_device_upload(void *device, const void *host, size_t bytes);
void tgc_device_download(void *host, const void *device, size_t bytes);
/// Waits for the step's work (a no-op on the host, where it is done).
void tgc_device_synchronize(void);
/// "NVIDIA H200 (sm_90, 139.8 GiB)", or "" for the host.
const char *tgc_device_description(void);
/// Device memory in use now (all processes), in bytes; 0 for the host.
size_t tgc_device_bytes_in_use(void);
}

#endif // TGC_RUNTIME_DEVICE_H
