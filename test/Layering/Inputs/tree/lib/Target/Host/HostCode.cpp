#include "tgc/Target/Host/HostCode.h"
#include "tgc/Target/CPU/CPUTarget.h"
