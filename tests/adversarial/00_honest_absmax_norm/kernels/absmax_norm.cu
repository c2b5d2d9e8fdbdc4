// absmax_norm.cu -- y = x / max(|x|) over a contiguous fp32 tensor, in two kernels:
//   1. absmax_partial: each block reduces |x| over its grid-stride share to one partial maximum;
//   2. scale_by_absmax: each block reduces all partial maxima (in shared memory) and divides its share.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Block-wide maximum; every thread gets it.
__device__ __forceinline__ float block_max(float v) {
    __shared__ float smem[kWarps];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < kWarps ? smem[lane] : 0.0f;
    v = warp_max(v);
    __syncthreads();  // smem is free again for a later call
    return v;
}

__device__ __forceinline__ float absmax4(float4 v) {
    return fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
}

__global__ void __launch_bounds__(kThreads) absmax_partial(const float* __restrict__ x, int64_t n, bool vec,
                                                           float* __restrict__ partial) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    float m = 0.0f;
    int64_t done = 0;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int64_t n4 = n / 4;
        for (int64_t i = first; i < n4; i += stride) m = fmaxf(m, absmax4(x4[i]));
        done = 4 * n4;
    }
    for (int64_t i = done + first; i < n; i += stride) m = fmaxf(m, fabsf(x[i]));
    m = block_max(m);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

__global__ void __launch_bounds__(kThreads) scale_by_absmax(const float* __restrict__ x, int64_t n, bool vec,
                                                            const float* __restrict__ partial, int partials,
                                                            float* __restrict__ y) {
    float m = 0.0f;
    for (int i = threadIdx.x; i < partials; i += blockDim.x) m = fmaxf(m, partial[i]);
    m = block_max(m);
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    int64_t done = 0;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        const int64_t n4 = n / 4;
        for (int64_t i = first; i < n4; i += stride) {
            const float4 v = __ldcs(x4 + i);
            __stcs(y4 + i, make_float4(v.x / m, v.y / m, v.z / m, v.w / m));
        }
        done = 4 * n4;
    }
    for (int64_t i = done + first; i < n; i += stride) y[i] = x[i] / m;
}

}  // namespace

extern "C" int absmax_norm_blocks(int64_t n, int sms) {
    int64_t blocks = (n / 4 + kThreads - 1) / kThreads;
    const int64_t cap = static_cast<int64_t>(sms > 0 ? sms : 132) * 4;
    if (blocks > cap) blocks = cap;
    return blocks < 1 ? 1 : static_cast<int>(blocks);
}

// `partial` holds absmax_norm_blocks(n, sms) floats.
extern "C" void launch_absmax_norm(const float* x, float* y, float* partial, int64_t n, int sms, cudaStream_t stream) {
    if (n <= 0) return;
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int blocks = absmax_norm_blocks(n, sms);
    absmax_partial<<<blocks, kThreads, 0, stream>>>(x, n, vec, partial);
    scale_by_absmax<<<blocks, kThreads, 0, stream>>>(x, n, vec, partial, blocks, y);
}
