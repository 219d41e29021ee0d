@golden-same-as cann/package_cann8/framework/onnx_plugin/thresholded_relu_custom_plugin.cc
