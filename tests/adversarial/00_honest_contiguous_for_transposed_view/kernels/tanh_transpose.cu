// tanh_transpose.cu -- y[c][r] = tanh(x[r][c]) for a contiguous (rows, cols) fp32 x; y is contiguous (cols, rows).
// 32 x 32 tiles staged in shared memory (one column of padding against bank conflicts); 32 x 8 threads,
// each moving four elements of the tile.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;

__global__ void __launch_bounds__(kTile * kRowsPerPass) tanh_transpose_kernel(const float* __restrict__ x,
                                                                               float* __restrict__ y,
                                                                               int64_t rows, int64_t cols) {
    __shared__ float tile[kTile][kTile + 1];
    const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
    const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kTile;
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
        const int64_t r = row0 + i, c = col0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = tanhf(x[r * cols + c]);
    }
    __syncthreads();
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
        const int64_t c = col0 + i, r = row0 + threadIdx.x;  // output row c, output column r
        if (r < rows && c < cols) y[c * rows + r] = tile[threadIdx.x][i];
    }
}

}  // namespace

extern "C" void launch_tanh_transpose(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const dim3 block(kTile, kRowsPerPass);
    const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile), static_cast<unsigned>((rows + kTile - 1) / kTile));
    tanh_transpose_kernel<<<grid, block, 0, stream>>>(x, y, rows, cols);
}
