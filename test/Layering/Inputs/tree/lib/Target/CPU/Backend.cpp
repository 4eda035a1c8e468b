#include "tgc/Target/CPU/Passes.h"
#include "tgc/Target/CUDA/CUDATarget.h"
