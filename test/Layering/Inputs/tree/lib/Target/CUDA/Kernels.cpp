// clang-format off: the include order is the test input.
#include "tgc/Target/CUDA/Passes.h"
#include "tgc/Target/CPU/TileModel.h"
#include "../CPU/MatmulStages.h"
