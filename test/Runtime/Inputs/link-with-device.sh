#!/bin/sh
# A TGC_CXX for tests: the link tgc runs, with the device layer in
# $TGC_TEST_DEVICE_LIB linked first and whole, so that it replaces the host
# one in libtgc_runtime.a (as the CUDA runtime does in GPU executables).
exec clang++-22 -Wl,--whole-archive "$TGC_TEST_DEVICE_LIB" -Wl,--no-whole-archive "$@"
