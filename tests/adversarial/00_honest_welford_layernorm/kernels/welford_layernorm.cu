// welford_layernorm.cu -- y = (x - mean) / sqrt(var + eps) * weight + bias over each row of a (rows, cols) fp32
// matrix (biased variance, like torch), cols == 256 * kPerThread. One 256-thread block per row; thread t holds
// columns t, t + 256, ... in registers and runs Welford over them; partial (count, mean, M2) are merged with
// Chan's formula, first across the warp with shuffles, then across the 8 warps in shared memory.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kPerThread = 32;  // cols = 8192

struct Stats {
    float n, mean, m2;
};

__device__ __forceinline__ Stats merge(Stats a, Stats b) {
    const float n = a.n + b.n;
    if (n == 0.0f) return a;
    const float delta = b.mean - a.mean;
    const float wb = b.n / n;
    Stats out;
    out.n = n;
    out.mean = a.mean + delta * wb;
    out.m2 = a.m2 + b.m2 + delta * delta * a.n * wb;
    return out;
}

__device__ __forceinline__ Stats warp_merge(Stats s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        Stats other;
        other.n = __shfl_xor_sync(0xffffffffu, s.n, o);
        other.mean = __shfl_xor_sync(0xffffffffu, s.mean, o);
        other.m2 = __shfl_xor_sync(0xffffffffu, s.m2, o);
        s = merge(s, other);
    }
    return s;
}

__global__ void __launch_bounds__(kThreads)
welford_layernorm_rows(const float* __restrict__ x, const float* __restrict__ weight, const float* __restrict__ bias,
                       float* __restrict__ y, int cols, float eps) {
    __shared__ float sn[kWarps], smean[kWarps], sm2[kWarps];
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
    float v[kPerThread];
    Stats s = {0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
        v[j] = xr[threadIdx.x + j * kThreads];
        s.n += 1.0f;
        const float delta = v[j] - s.mean;
        s.mean += delta / s.n;
        s.m2 = fmaf(delta, v[j] - s.mean, s.m2);
    }
    s = warp_merge(s);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sn[warp] = s.n;
        smean[warp] = s.mean;
        sm2[warp] = s.m2;
    }
    __syncthreads();
    Stats t = {0.0f, 0.0f, 0.0f};
    if (lane < kWarps) t = Stats{sn[lane], smean[lane], sm2[lane]};
    t = warp_merge(t);  // every warp merges the 8 partials the same way
    const float mean = t.mean;
    const float rstd = rsqrtf(t.m2 / static_cast<float>(cols) + eps);
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
        const int c = threadIdx.x + j * kThreads;
        yr[c] = (v[j] - mean) * rstd * weight[c] + bias[c];
    }
}

}  // namespace

extern "C" void launch_welford_layernorm(const float* x, const float* weight, const float* bias, float* y, int rows,
                                         int cols, float eps, cudaStream_t stream) {
    welford_layernorm_rows<<<rows, kThreads, 0, stream>>>(x, weight, bias, y, cols, eps);
}
