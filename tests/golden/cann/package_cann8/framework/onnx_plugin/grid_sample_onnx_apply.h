@golden-same-as cann/grid_sample/framework/onnx_plugin/grid_sample_onnx_apply.h
