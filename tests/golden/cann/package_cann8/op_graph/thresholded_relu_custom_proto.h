@golden-same-as cann/package_cann8/aicpu/op_proto/thresholded_relu_custom.h
