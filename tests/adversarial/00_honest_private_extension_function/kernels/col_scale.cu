#include <cuda_runtime.h>
#include <cstdint>

namespace {
__global__ void __launch_bounds__(256)
col_scale(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int64_t n, int cols) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = x[i] * __ldg(w + i % cols);
}
}  // namespace

extern "C" void col_scale_launcher(const float* x, const float* w, float* y, int64_t n, int cols, cudaStream_t s) {
    int64_t blocks = (n + 255) / 256;
    if (blocks > 132 * 8) blocks = 132 * 8;
    if (n > 0) col_scale<<<(unsigned)blocks, 256, 0, s>>>(x, w, y, n, cols);
}
