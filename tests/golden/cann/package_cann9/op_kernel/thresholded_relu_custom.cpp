@golden-same-as cann/package_cann8/op_kernel/thresholded_relu_custom.cpp
