// A stand-in for the CUDA runtime (libcudart) with the five functions HeadScope looks up at run time
// (core/model/cuda_runtime.cpp), for testing the paths a CUDA libtorch takes on a machine without a usable
// GPU. fakeCudaSet chooses what cudaGetDeviceCount returns and the free memory reported.
#include <cstddef>

extern "C" {

static int fakeError = 100;  // cudaErrorNoDevice
static int fakeCount = 0;
static size_t fakeFree = 0;

void fakeCudaSet(int error, int count, size_t freeBytes) {
  fakeError = error;
  fakeCount = count;
  fakeFree = freeBytes;
}

int cudaGetDeviceCount(int* count) {
  *count = fakeError == 0 ? fakeCount : 0;
  return fakeError;
}

const char* cudaGetErrorString(int error) {
  switch (error) {
    case 35:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case 100:
      return "no CUDA-capable device is detected";
    default:
      return "unrecognized error code";
  }
}

static int current = 0;

int cudaGetDevice(int* device) {
  *device = current;
  return 0;
}

int cudaSetDevice(int device) {
  if (device < 0 || device >= fakeCount) return 101;  // cudaErrorInvalidDevice
  current = device;
  return 0;
}

int cudaMemGetInfo(size_t* freeBytes, size_t* totalBytes) {
  *freeBytes = fakeFree;
  *totalBytes = 2 * fakeFree;
  return 0;
}

}  // extern "C"
