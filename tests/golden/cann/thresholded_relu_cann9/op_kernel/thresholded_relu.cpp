@golden-same-as cann/thresholded_relu_cann8/op_kernel/thresholded_relu.cpp
