@golden-same-as cann/grid_sample/framework/onnx_plugin/opsdk_onnx_attrs.h
