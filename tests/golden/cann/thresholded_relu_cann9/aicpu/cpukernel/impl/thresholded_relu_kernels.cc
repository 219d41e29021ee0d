@golden-same-as cann/thresholded_relu_cann8/aicpu/cpukernel/impl/thresholded_relu_kernels.cc
