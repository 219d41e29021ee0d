@golden-same-as cann/package_cann8/op_host/thresholded_relu_custom.cpp
