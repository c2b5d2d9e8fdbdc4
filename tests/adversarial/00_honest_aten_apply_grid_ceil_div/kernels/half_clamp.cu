#include <ATen/cuda/ApplyGridUtils.cuh>
#include <cuda_runtime.h>
#include <cstdint>

namespace {
__global__ void half_clamp(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = 0.5f * fminf(fmaxf(x[i], -1.f), 1.f);
}
}  // namespace

extern "C" cudaError_t half_clamp_launcher(const float* x, float* y, int64_t n, int device, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const dim3 block = at::cuda::getApplyBlock();
    dim3 grid;
    if (!at::cuda::getApplyGrid((uint64_t)n, grid, device)) {
        grid = dim3((unsigned)at::cuda::ATenCeilDiv<int64_t>(n, (int64_t)block.x));
    }
    half_clamp<<<grid, block, 0, stream>>>(x, y, n);
    return cudaGetLastError();
}
