//===- CopyingDevice.cpp - a device layer for testing the copies ----------===//
//
// Device.h implemented with device buffers that are separate host buffers:
// linked into a CPU executable (in place of HostDevice.cpp), the compiled
// step then only sees what the training loop uploaded, and the loop only
// sees what it downloaded. Tests compare such an executable with a plain
// one: a missing or stale copy (of the batch, the scalars, the weights
// after --init or --resume, the loss, the gradients for --dump-grads, the
// weights for --save, the evaluation buffers) changes its output. Not
// linked into anything users get (libtgc_runtime_copying_device.a).
//
//===----------------------------------------------------------------------===//

#include "Device.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
int tgc_device_is_host(void) { return 0; }

void *tgc_device_alloc(size_t bytes, void *) {
  void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
  if (!p) {
    std::fprintf(stderr, "error: out of memory (test device)\n");
    std::exit(1);
  }
  std::memset(p, 0, bytes);
  return p;
}

void tgc_device_free(void *device) { std::free(device); }

void tgc_device_upload(void *device, const void *host, size_t bytes) {
  std::memcpy(device, host, bytes);
}

void tgc_device_download(void *host, const void *device, size_t bytes) {
  std::memcpy(host, device, bytes);
}

void tgc_device_synchronize(void) {}

const char *tgc_device_description(void) {
  return "the test device (separate host buffers)";
}

size_t tgc_device_bytes_in_use(void) { return 0; }
}
