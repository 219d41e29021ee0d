// lib/sort/topk.h of the high-level library: in opsdk's model, kernel_operator.h has it.
#include "kernel_operator.h"
