#include <cuda_runtime.h>
#include <cstdint>

namespace {

__global__ void softsign_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] / (1.0f + fabsf(x[i]));
}

}  // namespace

cudaError_t launch_softsign(const float* x, float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    const int64_t blocks = (n + 255) / 256 < 132 * 16 ? (n + 255) / 256 : 132 * 16;
    softsign_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(x, y, n);
    return cudaGetLastError();
}
