// lib/activation/simplesoftmax.h of the high-level library: in opsdk's model, kernel_operator.h has it (as CANN 8.1's does).
#include "kernel_operator.h"
