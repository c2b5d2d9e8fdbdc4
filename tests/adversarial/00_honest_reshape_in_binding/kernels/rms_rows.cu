// rms_rows.cu -- y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + 1e-6) for a row-major (rows, d) fp32 matrix.
// One block of 256 threads per row: each thread keeps its float4s in registers (d <= 4096 on the vector
// path), the block sums the squares (warp shuffles, then one warp over the per-warp sums), and every
// thread writes its scaled float4s. x is read once and y written once. Other d: the same plan in scalars.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kMaxVec = 4;  // float4s per thread kept in registers: d <= 256 * 4 * 4

__device__ float block_sum(float v) {
    __shared__ float warp_sums[kThreads / 32];
    __shared__ float total;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float w = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
        if (threadIdx.x == 0) total = w;
    }
    __syncthreads();
    return total;
}

__global__ void __launch_bounds__(kThreads) rms_rows_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t d4) {
    const float4* row = x + blockIdx.x * d4;
    float4* out = y + blockIdx.x * d4;
    float4 v[kMaxVec];
    float sq = 0.f;
#pragma unroll
    for (int k = 0; k < kMaxVec; ++k) {
        const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kThreads;
        v[k] = i < d4 ? __ldcs(row + i) : make_float4(0.f, 0.f, 0.f, 0.f);
        sq += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
    }
    const float scale = rsqrtf(block_sum(sq) / static_cast<float>(d4 * 4) + 1e-6f);
#pragma unroll
    for (int k = 0; k < kMaxVec; ++k) {
        const int64_t i = threadIdx.x + static_cast<int64_t>(k) * kThreads;
        if (i < d4) __stcs(out + i, make_float4(v[k].x * scale, v[k].y * scale, v[k].z * scale, v[k].w * scale));
    }
}

__global__ void __launch_bounds__(kThreads) rms_rows_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t d) {
    const float* row = x + blockIdx.x * d;
    float* out = y + blockIdx.x * d;
    float sq = 0.f;
    for (int64_t i = threadIdx.x; i < d; i += kThreads) sq += row[i] * row[i];
    const float scale = rsqrtf(block_sum(sq) / static_cast<float>(d) + 1e-6f);
    for (int64_t i = threadIdx.x; i < d; i += kThreads) out[i] = row[i] * scale;
}

}  // namespace

extern "C" void rms_rows_launcher(const float* x, float* y, int64_t rows, int64_t d, cudaStream_t stream) {
    if (rows == 0 || d == 0) return;
    const bool aligned = (reinterpret_cast<uintptr_t>(x) % 16 == 0) && (reinterpret_cast<uintptr_t>(y) % 16 == 0);
    if (aligned && d % 4 == 0 && d / 4 <= static_cast<int64_t>(kThreads) * kMaxVec) {
        rms_rows_vec4<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
            reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), d / 4);
    } else {
        rms_rows_scalar<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, d);
    }
}
