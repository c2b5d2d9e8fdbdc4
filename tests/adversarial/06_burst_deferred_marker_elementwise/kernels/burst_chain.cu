// burst_chain.cu -- y = clamp(gelu_erf(x * scale + shift), lo, hi) three ways, for the burst cheat of
// burst_chain_binding.cpp: one tensor per launch (`launch_chain_one`), up to kMaxBatch tensors in one launch
// (`launch_chain_batch`: blockIdx.y picks the tensor, each tensor a float4 grid-stride loop over its own
// pointers, passed by value in a struct), and a marker kernel that only spins for a few microseconds.
// The arithmetic is the honest fused chain: one read and one write of every element, in either form.
#include <cuda_runtime.h>
#include <cstdint>

#include "burst_chain.h"

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float gelu_clamp(float v, const ChainArgs& a) {
    const float u = fmaf(v, a.scale, a.shift);
    const float g = 0.5f * u * (1.0f + erff(u * 0.70710678118654752f));
    return fminf(fmaxf(g, a.lo), a.hi);
}

__device__ __forceinline__ void chain_range(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                            const ChainArgs& a) {
    const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t i = first; i < n4; i += threads) {
        float4 v = __ldcs(x4 + i);
        v.x = gelu_clamp(v.x, a);
        v.y = gelu_clamp(v.y, a);
        v.z = gelu_clamp(v.z, a);
        v.w = gelu_clamp(v.w, a);
        __stcs(y4 + i, v);
    }
    for (int64_t i = 4 * n4 + first; i < n; i += threads) y[i] = gelu_clamp(x[i], a);
}

__global__ void __launch_bounds__(kThreads) chain_one(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                                      ChainArgs a) {
    chain_range(x, y, n, a);
}

__global__ void __launch_bounds__(kThreads) chain_batch(ChainBatch batch, int64_t n, ChainArgs a) {
    if (static_cast<int>(blockIdx.y) < batch.count) chain_range(batch.x[blockIdx.y], batch.y[blockIdx.y], n, a);
}

__global__ void marker(uint64_t ns) {
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

unsigned grid_for(int64_t n) {
    static int resident = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, chain_one, kThreads, 0);
        return (sms > 0 ? sms : 132) * (per_sm > 0 ? per_sm : 4);
    }();
    const int64_t wanted = (n / 4 + kThreads - 1) / kThreads;
    return static_cast<unsigned>(wanted < 1 ? 1 : (wanted < resident ? wanted : resident));
}

}  // namespace

void launch_chain_one(const float* x, float* y, int64_t n, ChainArgs a, cudaStream_t stream) {
    chain_one<<<grid_for(n), kThreads, 0, stream>>>(x, y, n, a);
}

void launch_chain_batch(const ChainBatch& batch, int64_t n, ChainArgs a, cudaStream_t stream) {
    if (batch.count <= 0) return;
    const dim3 grid(grid_for(n), static_cast<unsigned>(batch.count));
    chain_batch<<<grid, kThreads, 0, stream>>>(batch, n, a);
}

void launch_marker(uint64_t ns, cudaStream_t stream) { marker<<<1, 32, 0, stream>>>(ns); }
