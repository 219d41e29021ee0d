@golden-same-as cann/grid_sample/aicpu/cpukernel/impl/grid_sample_kernels.cc
