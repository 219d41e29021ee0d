// The name op_host code includes CANN's host tiling API by; opsdk's model of it. Part of opsdk.
#include "lib/tiling_api.h"
