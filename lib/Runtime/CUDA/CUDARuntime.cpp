//===- CUDARuntime.cpp - the GPU executables' device layer ----------------===//
//
// Linked first and whole into executables of --target=cuda, before
// libtgc_runtime.a, whose host definitions of the same functions it
// replaces:
//  - the `mgpu*` entry points that MLIR's gpu-to-llvm lowering calls
//    (module load, kernel lookup and launch, streams, events, memory),
//    written over the CUDA driver API: Debian ships no MLIR CUDA runtime;
//  - the arena of planned intermediates (tgc_arena_alloc) in device memory;
//  - the buffers of weights, state, gradients and batches (Device.h).
// Every driver error names the failing call and the CUDA error, and ends
// the run (exit status 1) before anything is written.
//
//===----------------------------------------------------------------------===//

#include "../Device.h"
#include "tgc/Runtime/ABI.h"

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#define MGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

[[noreturn]] void fail(CUresult result, const char *call) {
  const char *name = nullptr, *text = nullptr;
  // The toolkit's stub library answers these with errors too.
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  std::fprintf(stderr, "error: CUDA: %s failed: %s (CUresult %d%s%s)\n", call,
               name ? name : "unknown error", static_cast<int>(result),
               text ? ": " : "", text ? text : "");
  if (result == CUDA_ERROR_STUB_LIBRARY)
    std::fprintf(stderr, "note: this is the CUDA toolkit's stub libcuda; run "
                         "on a machine with the NVIDIA driver\n");
  std::exit(1);
}

#define CHECK(call)                                                            \
  do {                                                                         \
    CUresult result_ = (call);                                                 \
    if (result_ != CUDA_SUCCESS)                                               \
      fail(result_, #call);                                                    \
  } while (0)

int defaultDevice = 0;

/// The primary context of the device, current on the calling thread. Kernel
/// modules load from global constructors, before main: everything calls
/// this first.
void ensureContext() {
  static std::once_flag once;
  static CUcontext primary = nullptr;
  std::call_once(once, [] {
    CUresult result = cuInit(0);
    if (result == CUDA_ERROR_NO_DEVICE) {
      std::fprintf(stderr, "error: CUDA: no GPU on this machine (this "
                           "executable was compiled with --target=cuda)\n");
      std::exit(1);
    }
    if (result != CUDA_SUCCESS)
      fail(result, "cuInit(0)");
    CUdevice device;
    CHECK(cuDeviceGet(&device, defaultDevice));
    CHECK(cuDevicePrimaryCtxRetain(&primary, device));
  });
  CUcontext current = nullptr;
  CHECK(cuCtxGetCurrent(&current));
  if (current != primary)
    CHECK(cuCtxSetCurrent(primary));
}

CUdeviceptr allocate(size_t bytes) {
  ensureContext();
  CUdeviceptr p = 0;
  CUresult result = cuMemAlloc(&p, bytes ? bytes : 1);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free = 0, total = 0;
    cuMemGetInfo(&free, &total);
    std::fprintf(stderr,
                 "error: CUDA: out of device memory allocating %zu bytes "
                 "(%zu of %zu bytes free)\n",
                 bytes, free, total);
    std::exit(1);
  }
  if (result != CUDA_SUCCESS)
    fail(result, "cuMemAlloc");
  return p;
}

CUdeviceptr arenaBase = 0;

} // namespace

//===----------------------------------------------------------------------===//
// mgpu*: what gpu-to-llvm's host code calls
//===----------------------------------------------------------------------===//

MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device) {
  defaultDevice = device;
}

MGPU_EXPORT CUmodule mgpuModuleLoad(void *data, size_t /*size*/) {
  ensureContext();
  CUmodule module = nullptr;
  CHECK(cuModuleLoadData(&module, data));
  return module;
}

MGPU_EXPORT CUmodule mgpuModuleLoadJIT(void *data, int optLevel) {
  ensureContext();
  CUmodule module = nullptr;
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log)),
                    reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  CUresult result = cuModuleLoadDataEx(&module, data, 3, options, values);
  if (result != CUDA_SUCCESS) {
    std::fprintf(stderr, "PTX JIT log: %s\n", log);
    fail(result, "cuModuleLoadDataEx (PTX JIT)");
  }
  return module;
}

MGPU_EXPORT void mgpuModuleUnload(CUmodule module) {
  // At exit the driver may already be shutting down: nothing to report.
  if (module)
    cuModuleUnload(module);
}

MGPU_EXPORT CUfunction mgpuModuleGetFunction(CUmodule module,
                                             const char *name) {
  CUfunction function = nullptr;
  CHECK(cuModuleGetFunction(&function, module, name));
  return function;
}

MGPU_EXPORT void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                  intptr_t gridY, intptr_t gridZ,
                                  intptr_t blockX, intptr_t blockY,
                                  intptr_t blockZ, int32_t sharedBytes,
                                  CUstream stream, void **params, void **extra,
                                  size_t /*paramsCount*/) {
  ensureContext();
  if (sharedBytes > 48 * 1024)
    CHECK(cuFuncSetAttribute(function,
                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             sharedBytes));
  CHECK(cuLaunchKernel(function, gridX, gridY, gridZ, blockX, blockY, blockZ,
                       sharedBytes, stream, params, extra));
}

MGPU_EXPORT CUstream mgpuStreamCreate() {
  ensureContext();
  CUstream stream = nullptr;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return stream;
}

MGPU_EXPORT void mgpuStreamDestroy(CUstream stream) {
  CHECK(cuStreamDestroy(stream));
}

MGPU_EXPORT void mgpuStreamSynchronize(CUstream stream) {
  CHECK(cuStreamSynchronize(stream));
}

MGPU_EXPORT void mgpuStreamWaitEvent(CUstream stream, CUevent event) {
  CHECK(cuStreamWaitEvent(stream, event, 0));
}

MGPU_EXPORT CUevent mgpuEventCreate() {
  ensureContext();
  CUevent event = nullptr;
  CHECK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
  return event;
}

MGPU_EXPORT void mgpuEventDestroy(CUevent event) {
  CHECK(cuEventDestroy(event));
}

MGPU_EXPORT void mgpuEventSynchronize(CUevent event) {
  CHECK(cuEventSynchronize(event));
}

MGPU_EXPORT void mgpuEventRecord(CUevent event, CUstream stream) {
  CHECK(cuEventRecord(event, stream));
}

MGPU_EXPORT void *mgpuMemAlloc(uint64_t bytes, CUstream /*stream*/,
                               uint8_t /*isHostShared*/) {
  if (bytes == 0)
    return nullptr;
  return reinterpret_cast<void *>(allocate(bytes));
}

MGPU_EXPORT void mgpuMemFree(void *pointer, CUstream /*stream*/) {
  if (pointer)
    CHECK(cuMemFree(reinterpret_cast<CUdeviceptr>(pointer)));
}

MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t bytes,
                            CUstream stream) {
  CHECK(cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), bytes, stream));
}

MGPU_EXPORT void mgpuMemset32(void *dst, unsigned value, size_t count,
                              CUstream stream) {
  CHECK(cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         stream));
}

MGPU_EXPORT void mgpuMemset16(void *dst, unsigned short value, size_t count,
                              CUstream stream) {
  CHECK(cuMemsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                         stream));
}

//===----------------------------------------------------------------------===//
// The arena of planned intermediates, in device memory
//===----------------------------------------------------------------------===//

extern "C" {

void *tgc_arena_alloc(int64_t offset) {
  if (!arenaBase)
    arenaBase = allocate(static_cast<size_t>(tgc_arena_bytes));
  return reinterpret_cast<void *>(arenaBase + offset);
}

void tgc_arena_release(void *pointer) {
  CUdeviceptr p = reinterpret_cast<CUdeviceptr>(pointer);
  if (arenaBase && p >= arenaBase &&
      p < arenaBase + static_cast<CUdeviceptr>(tgc_arena_bytes))
    return;
  if (pointer)
    CHECK(cuMemFree(p));
}

//===----------------------------------------------------------------------===//
// Device.h: the step's buffers
//===----------------------------------------------------------------------===//

int tgc_device_is_host(void) { return 0; }

void *tgc_device_alloc(size_t bytes, void * /*host*/) {
  CUdeviceptr p = allocate(bytes);
  CHECK(cuMemsetD8(p, 0, bytes ? bytes : 1));
  return reinterpret_cast<void *>(p);
}

void tgc_device_free(void *device) {
  if (device)
    cuMemFree(reinterpret_cast<CUdeviceptr>(device));
}

void tgc_device_upload(void *device, const void *host, size_t bytes) {
  ensureContext();
  CHECK(cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes));
}

void tgc_device_download(void *host, const void *device, size_t bytes) {
  ensureContext();
  CHECK(cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes));
}

void tgc_device_synchronize(void) {
  ensureContext();
  CHECK(cuCtxSynchronize());
}

size_t tgc_device_bytes_in_use(void) {
  ensureContext();
  size_t free = 0, total = 0;
  CHECK(cuMemGetInfo(&free, &total));
  return total - free;
}

const char *tgc_device_description(void) {
  static std::string description;
  if (description.empty()) {
    ensureContext();
    CUdevice device;
    CHECK(cuCtxGetDevice(&device));
    char name[256] = {0};
    CHECK(cuDeviceGetName(name, sizeof name, device));
    size_t total = 0;
    CHECK(cuDeviceTotalMem(&total, device));
    int major = 0, minor = 0;
    CHECK(cuDeviceGetAttribute(
        &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    CHECK(cuDeviceGetAttribute(
        &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
    char text[400];
    std::snprintf(text, sizeof text, "%s (sm_%d%d, %.1f GiB)", name, major,
                  minor, total / (1024.0 * 1024.0 * 1024.0));
    description = text;
  }
  return description.c_str();
}
}
