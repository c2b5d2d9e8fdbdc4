// l1norm_pdl.cu -- kernel 1: per-row cols/sum|x| into a scratch vector; kernel 2: y = x * inv[row].
// Kernel 2 is launched with programmatic stream serialization so its prologue overlaps kernel 1's tail.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) row_inv_l1(const float* __restrict__ x, float* __restrict__ inv, int cols) {
    __shared__ float warp_sums[kThreads / 32];
    const float* xr = x + (int64_t)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += kThreads) s += fabsf(xr[c]);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) inv[blockIdx.x] = (float)cols / s;
    }
    cudaTriggerProgrammaticLaunchCompletion();
}

__global__ void __launch_bounds__(kThreads)
scale_rows(const float* __restrict__ x, const float* __restrict__ inv, float* __restrict__ y, int cols) {
    const int64_t base = (int64_t)blockIdx.x * cols;
    cudaGridDependencySynchronize();  // inv[] is complete from here on
    const float r = inv[blockIdx.x];
    for (int c = threadIdx.x; c < cols; c += kThreads) y[base + c] = x[base + c] * r;
}

struct LaunchSpec {
    cudaLaunchConfig_t config{};
    cudaLaunchAttribute attr[1]{};
};

}  // namespace

extern "C" cudaError_t l1norm_launcher(const float* x, float* inv, float* y, int rows, int cols, cudaStream_t stream) {
    if (rows <= 0) return cudaSuccess;
    row_inv_l1<<<rows, kThreads, 0, stream>>>(x, inv, cols);
    LaunchSpec spec;
    spec.config.gridDim = dim3(rows);
    spec.config.blockDim = dim3(kThreads);
    spec.config.dynamicSmemBytes = 0;
    spec.config.stream = stream;
    spec.attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    spec.attr[0].val.programmaticStreamSerializationAllowed = 1;
    spec.config.attrs = spec.attr;
    spec.config.numAttrs = 1;
    return cudaLaunchKernelEx(&spec.config, scale_rows, x, static_cast<const float*>(inv), y, cols);
}
