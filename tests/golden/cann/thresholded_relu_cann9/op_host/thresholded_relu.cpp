@golden-same-as cann/thresholded_relu_cann8/op_host/thresholded_relu.cpp
