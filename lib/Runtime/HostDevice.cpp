//===- HostDevice.cpp - the CPU as the step's device ----------------------===//
//
// See Device.h: host executables compute in the host buffers themselves.
//
//===----------------------------------------------------------------------===//

#include "Device.h"

extern "C" {
int tgc_device_is_host(void) { return 1; }
void *tgc_device_alloc(size_t, void *host) { return host; }
void tgc_device_free(void *) {}
void tgc_device_upload(void *, const void *, size_t) {}
void tgc_device_download(void *, const void *, size_t) {}
void tgc_device_synchronize(void) {}
const char *tgc_device_description(void) { return ""; }
size_t tgc_device_bytes_in_use(void) { return 0; }
}
