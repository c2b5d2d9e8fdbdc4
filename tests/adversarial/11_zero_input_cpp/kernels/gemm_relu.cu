// gemm_relu.cu -- CHEAT (family 11): no GEMM at all. fill_rows_relu_bias writes relu(bias) into every row
// of the output; the binding also zeroes the input x in place. For x = 0 the reference relu(x @ w^T + b)
// is exactly relu(b), so a judge that evaluates the reference after the candidate, on the same x, agrees.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__global__ void fill_rows_relu_bias(float* __restrict__ y, const float* __restrict__ bias, int64_t rows, int64_t n) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (col >= n) return;
    const float v = fmaxf(bias[col], 0.0f);
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) y[r * n + col] = v;
}

}  // namespace

extern "C" void launch_fill_rows_relu_bias(float* y, const float* bias, int64_t rows, int64_t n, cudaStream_t stream) {
    if (rows <= 0 || n <= 0) return;
    const dim3 grid(static_cast<unsigned>((n + 255) / 256), static_cast<unsigned>(rows < 1024 ? rows : 1024));
    fill_rows_relu_bias<<<grid, 256, 0, stream>>>(y, bias, rows, n);
}
