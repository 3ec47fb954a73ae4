// The OpenCL 1.2 entry points polychip uses, loaded at run time with dlopen
// so libpolychip never links against an ICD loader (decision 3): where
// libOpenCL.so.1 is missing the adapter reports zero devices and the reason.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>

namespace polychip::opencl {

struct ClApi {
#define POLYCHIP_CL_FUNCTIONS(X)  \
  X(clGetPlatformIDs)             \
  X(clGetPlatformInfo)            \
  X(clGetDeviceIDs)               \
  X(clGetDeviceInfo)              \
  X(clCreateContext)              \
  X(clReleaseContext)             \
  X(clCreateCommandQueue)         \
  X(clReleaseCommandQueue)        \
  X(clCreateBuffer)               \
  X(clReleaseMemObject)           \
  X(clEnqueueReadBuffer)          \
  X(clEnqueueWriteBuffer)         \
  X(clEnqueueCopyBuffer)          \
  X(clEnqueueFillBuffer)          \
  X(clEnqueueMapBuffer)           \
  X(clEnqueueUnmapMemObject)      \
  X(clFinish)                     \
  X(clFlush)                      \
  X(clCreateProgramWithSource)    \
  X(clBuildProgram)               \
  X(clGetProgramBuildInfo)        \
  X(clReleaseProgram)             \
  X(clCreateKernel)               \
  X(clReleaseKernel)              \
  X(clSetKernelArg)               \
  X(clEnqueueNDRangeKernel)       \
  X(clEnqueueMarkerWithWaitList)  \
  X(clEnqueueBarrierWithWaitList) \
  X(clGetEventInfo)               \
  X(clGetEventProfilingInfo)      \
  X(clWaitForEvents)              \
  X(clReleaseEvent)
#define POLYCHIP_CL_DECLARE(name) decltype(&::name) name = nullptr;
  POLYCHIP_CL_FUNCTIONS(POLYCHIP_CL_DECLARE)
#undef POLYCHIP_CL_DECLARE
};

// The process-wide table. nullptr when the runtime could not be loaded;
// then `reason` says why (names the library and dlerror's text).
const ClApi* cl_api(std::string* reason);

// "CL_OUT_OF_RESOURCES (-5)"
std::string cl_error_name(cl_int code);

}  // namespace polychip::opencl
