# The OpenCL C kernel source family shared by the opencl and level_zero
# adapters. common.cl is the prelude of every other file.
set(POLYCHIP_OPENCL_C_DIR ${CMAKE_CURRENT_LIST_DIR})
set(POLYCHIP_OPENCL_C_PRELUDE common)
set(POLYCHIP_OPENCL_C_KERNEL_FILES
    elementwise cast reduction softmax gemm norm loss embedding attention)
set(POLYCHIP_OPENCL_C_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake)
