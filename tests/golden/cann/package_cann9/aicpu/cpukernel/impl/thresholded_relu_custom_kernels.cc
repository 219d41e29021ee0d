@golden-same-as cann/package_cann8/aicpu/cpukernel/impl/thresholded_relu_custom_kernels.cc
