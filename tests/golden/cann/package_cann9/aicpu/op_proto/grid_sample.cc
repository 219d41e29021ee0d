@golden-same-as cann/grid_sample/aicpu/op_proto/grid_sample.cc
