#include <cuda_runtime.h>
#include <cstdint>

namespace {
__global__ void row_sq_norms(const float* __restrict__ a, float* __restrict__ out, int rows, int d) {
    const int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (r >= rows) return;
    float s = 0.f;
    for (int k = lane; k < d; k += 32) s = fmaf(a[(int64_t)r * d + k], a[(int64_t)r * d + k], s);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[r] = s;
}

// dist[i][j] = sqrt(max(xn[i] + yn[j] - 2 * dot[i][j], 0)), in place on the GEMM output.
__global__ void distance_epilogue(float* __restrict__ dist, const float* __restrict__ xn, const float* __restrict__ yn, int m, int n) {
    const int64_t total = (int64_t)m * n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const float d2 = xn[i / n] + yn[i % n] - 2.f * dist[i];
        dist[i] = sqrtf(fmaxf(d2, 0.f));
    }
}
}  // namespace

extern "C" void cdist_norms(const float* x, const float* y, float* xn, float* yn, int m, int n, int d, cudaStream_t s) {
    row_sq_norms<<<(m + 7) / 8, 256, 0, s>>>(x, xn, m, d);
    row_sq_norms<<<(n + 7) / 8, 256, 0, s>>>(y, yn, n, d);
}
extern "C" void cdist_epilogue(float* dist, const float* xn, const float* yn, int m, int n, cudaStream_t s) {
    distance_epilogue<<<132 * 8, 256, 0, s>>>(dist, xn, yn, m, n);
}
