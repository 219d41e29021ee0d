@golden-same-as cann/thresholded_relu_cann8/framework/onnx_plugin/thresholded_relu_onnx_apply.h
