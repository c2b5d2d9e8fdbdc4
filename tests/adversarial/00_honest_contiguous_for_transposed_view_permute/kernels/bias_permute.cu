// bias_permute.cu -- y[b][c][t] = x[b][t][c] + bias[c] for contiguous x (B, T, C); y is contiguous (B, C, T).
// One 32 x 32 tile of one batch per block (blockIdx.z = batch), staged in padded shared memory.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;

__global__ void __launch_bounds__(kTile * kRowsPerPass) bias_permute_kernel(const float* __restrict__ x,
                                                                             const float* __restrict__ bias,
                                                                             float* __restrict__ y, int64_t tokens,
                                                                             int64_t channels) {
    __shared__ float tile[kTile][kTile + 1];
    const int64_t plane = tokens * channels;
    const float* xb = x + static_cast<int64_t>(blockIdx.z) * plane;
    float* yb = y + static_cast<int64_t>(blockIdx.z) * plane;
    const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
    const int64_t t0 = static_cast<int64_t>(blockIdx.y) * kTile;
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
        const int64_t t = t0 + i, c = c0 + threadIdx.x;
        if (t < tokens && c < channels) tile[i][threadIdx.x] = xb[t * channels + c] + bias[c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
        const int64_t c = c0 + i, t = t0 + threadIdx.x;
        if (t < tokens && c < channels) yb[c * tokens + t] = tile[threadIdx.x][i];
    }
}

}  // namespace

extern "C" void launch_bias_permute(const float* x, const float* bias, float* y, int64_t batch, int64_t tokens,
                                    int64_t channels, cudaStream_t stream) {
    if (batch <= 0 || tokens <= 0 || channels <= 0) return;
    const dim3 block(kTile, kRowsPerPass);
    const dim3 grid(static_cast<unsigned>((channels + kTile - 1) / kTile),
                    static_cast<unsigned>((tokens + kTile - 1) / kTile), static_cast<unsigned>(batch));
    bias_permute_kernel<<<grid, block, 0, stream>>>(x, bias, y, tokens, channels);
}
