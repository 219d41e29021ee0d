@golden-same-as cann/thresholded_relu_cann8/aicpu/cpukernel/opsdk_aicpu.cmake
