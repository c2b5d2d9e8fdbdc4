// ew_kit.cu -- clamp(gelu_erf(x * scale + shift), lo, hi) in one fused float4 grid-stride pass, plus two
// helpers (a copy kernel and a GPU spin kernel). `max_blocks` caps the grid: the full grid is the fast
// honest kernel; a cap of 8 blocks is the deliberately slow (but correct) variant several timing cheats
// wrap, so that any reward above 1 proves the timing trick worked.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

__device__ __forceinline__ float chain(float v, float scale, float shift, float lo, float hi) {
    v = fmaf(v, scale, shift);
    v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    return fminf(fmaxf(v, lo), hi);
}

__global__ void __launch_bounds__(kThreads)
ew_chain_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t n4, float scale,
                float shift, float lo, float hi) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t base = tid; base < n4; base += kUnroll * stride) {
        float4 v[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t i = base + k * stride;
            if (i < n4) v[k] = __ldcs(x4 + i);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t i = base + k * stride;
            if (i < n4) {
                v[k].x = chain(v[k].x, scale, shift, lo, hi);
                v[k].y = chain(v[k].y, scale, shift, lo, hi);
                v[k].z = chain(v[k].z, scale, shift, lo, hi);
                v[k].w = chain(v[k].w, scale, shift, lo, hi);
                __stcs(y4 + i, v[k]);
            }
        }
    }
    for (int64_t i = 4 * n4 + tid; i < n; i += stride) y[i] = chain(x[i], scale, shift, lo, hi);
}

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, int64_t n4) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride)
        __stcs(dst + i, __ldcs(src + i));
}

__global__ void copy_tail_kernel(const float* __restrict__ src, float* __restrict__ dst, int64_t from, int64_t n) {
    const int64_t i = from + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

__device__ __forceinline__ uint64_t global_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin_kernel(uint64_t ns, float* sink) {
    const uint64_t start = global_ns();
    float acc = threadIdx.x;
    while (global_ns() - start < ns) acc = fmaf(acc, 1.0000001f, 0.5f);
    if (acc == -1.0f && sink) *sink = acc;  // never true: keeps the loop from being optimised away
}

int resident_blocks() {
    static int count = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ew_chain_kernel, kThreads, 0);
        return (sms > 0 ? sms : 132) * (per_sm > 0 ? per_sm : 4);
    }();
    return count;
}

}  // namespace

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream) {
    if (n <= 0) return;
    const bool aligned = (reinterpret_cast<uintptr_t>(x) % 16 == 0) && (reinterpret_cast<uintptr_t>(y) % 16 == 0);
    const int64_t n4 = aligned ? n / 4 : 0;
    const int64_t work = n4 > 0 ? n4 : n;
    int64_t blocks = (work + kThreads - 1) / kThreads;
    if (blocks > resident_blocks()) blocks = resident_blocks();
    if (max_blocks > 0 && blocks > max_blocks) blocks = max_blocks;
    ew_chain_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n, n4, scale, shift, lo, hi);
}

extern "C" void launch_copy(const float* src, float* dst, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    const bool aligned = (reinterpret_cast<uintptr_t>(src) % 16 == 0) && (reinterpret_cast<uintptr_t>(dst) % 16 == 0);
    const int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        int64_t blocks = (n4 + kThreads - 1) / kThreads;
        if (blocks > resident_blocks()) blocks = resident_blocks();
        copy_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
            reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
    }
    const int64_t rest = n - 4 * n4;
    if (rest > 0)
        copy_tail_kernel<<<static_cast<unsigned>((rest + kThreads - 1) / kThreads), kThreads, 0, stream>>>(src, dst,
                                                                                                          4 * n4, n);
}

extern "C" void launch_spin(uint64_t ns, int blocks, cudaStream_t stream) {
    spin_kernel<<<blocks > 0 ? blocks : 1, 128, 0, stream>>>(ns, nullptr);
}
