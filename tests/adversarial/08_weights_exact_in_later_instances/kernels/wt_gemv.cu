// wt_gemv.cu -- y = x @ Wt + bias for a skinny x (M <= 16 rows), Wt the fp32 weight laid out as (K, N) so that
// neighbouring threads read neighbouring columns: one thread per output column, all rows at once, x staged
// through shared memory in chunks of kChunk columns, fp32 FMA accumulation in k order.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kRows = 16;
constexpr int kChunk = 256;
constexpr int kThreads = 64;

__global__ void __launch_bounds__(kThreads)
wt_gemv_kernel(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias,
               float* __restrict__ y, int M, int N, int K) {
    __shared__ float xs[kRows][kChunk];
    const int n = blockIdx.x * kThreads + threadIdx.x;
    float acc[kRows];
#pragma unroll
    for (int m = 0; m < kRows; ++m) acc[m] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += kChunk) {
        __syncthreads();
        for (int i = threadIdx.x; i < kRows * kChunk; i += kThreads) {
            const int m = i / kChunk, c = i % kChunk;
            xs[m][c] = (m < M && k0 + c < K) ? x[static_cast<int64_t>(m) * K + k0 + c] : 0.0f;
        }
        __syncthreads();
        if (n >= N) continue;
        const int stop = min(kChunk, K - k0);
        for (int c = 0; c < stop; ++c) {
            const float w = __ldg(wt + static_cast<int64_t>(k0 + c) * N + n);
#pragma unroll
            for (int m = 0; m < kRows; ++m) acc[m] = fmaf(xs[m][c], w, acc[m]);
        }
    }
    if (n >= N) return;
    for (int m = 0; m < M; ++m) y[static_cast<int64_t>(m) * N + n] = acc[m] + bias[n];
}

}  // namespace

extern "C" void launch_wt_linear(const float* x, const float* wt, const float* bias, float* y, int M, int N, int K,
                                 cudaStream_t stream) {
    wt_gemv_kernel<<<(N + kThreads - 1) / kThreads, kThreads, 0, stream>>>(x, wt, bias, y, M, N, K);
}
