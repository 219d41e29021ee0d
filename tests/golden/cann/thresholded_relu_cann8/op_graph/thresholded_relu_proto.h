@golden-same-as cann/thresholded_relu_cann8/aicpu/op_proto/thresholded_relu.h
