#include <cuda_runtime.h>
#include <cstdint>

namespace {
constexpr int kTile = 32;
constexpr int kRows = 8;

__global__ void __launch_bounds__(kTile * kRows)
scaled_transpose(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, float scale) {
    __shared__ float tile[kTile][kTile + 1];
    const int64_t plane = (int64_t)rows * cols;
    const float* xb = x + blockIdx.z * plane;
    float* yb = y + blockIdx.z * plane;
    const int c0 = blockIdx.x * kTile, r0 = blockIdx.y * kTile;
#pragma unroll
    for (int i = threadIdx.y; i < kTile; i += kRows) {
        const int r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = xb[(int64_t)r * cols + c];
    }
    __syncthreads();
#pragma unroll
    for (int i = threadIdx.y; i < kTile; i += kRows) {
        const int c = c0 + i, r = r0 + threadIdx.x;  // y is (cols, rows)
        if (r < rows && c < cols) yb[(int64_t)c * rows + r] = scale * tile[threadIdx.x][i];
    }
}
}  // namespace

extern "C" void scaled_transpose_launcher(const float* x, float* y, int batch, int rows, int cols, float scale,
                                          cudaStream_t stream) {
    if (batch <= 0 || rows <= 0 || cols <= 0) return;
    const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile, batch);
    scaled_transpose<<<grid, dim3(kTile, kRows), 0, stream>>>(x, y, rows, cols, scale);
}
