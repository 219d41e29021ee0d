@golden-same-as cann/package_cann8/aicpu/cpukernel/opsdk_aicpu.cmake
