// cub_cumsum.cu -- inclusive prefix sum of a float array with cub::DeviceScan::InclusiveSum.
//
// CUB's device-wide scan (a single-pass decoupled look-back scan) is a header template: instantiating it
// here compiles its kernels into this extension. CUB's two-phase protocol: a call with a null temporary
// buffer only reports how many bytes the scan needs; the caller allocates them (through torch's allocator,
// in the binding) and calls again to run the scan. Both calls get the caller's stream.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

extern "C" cudaError_t cub_cumsum_temp_bytes(int64_t n, size_t* bytes, cudaStream_t stream) {
    *bytes = 0;
    return cub::DeviceScan::InclusiveSum(nullptr, *bytes, static_cast<const float*>(nullptr),
                                         static_cast<float*>(nullptr), n, stream);
}

extern "C" cudaError_t cub_cumsum(void* temp, size_t temp_bytes, const float* x, float* y, int64_t n,
                                  cudaStream_t stream) {
    return cub::DeviceScan::InclusiveSum(temp, temp_bytes, x, y, n, stream);
}
