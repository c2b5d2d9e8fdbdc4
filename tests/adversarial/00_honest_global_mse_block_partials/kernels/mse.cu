// mse.cu -- mean((p - t)^2) over every element of two contiguous fp32 tensors of the same size: a grid-stride
// pass of float4 loads into per-thread fp32 sums, a warp-shuffle block reduction into one partial per block,
// then one block sums the partials in double and divides by the count.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ float block_sum(float value) {
    __shared__ float warp_sums[kThreads / 32];
    for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = value;
    __syncthreads();
    value = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
    if (warp == 0) {
        for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    return value;
}

__global__ void squared_difference_partials(const float* __restrict__ p, const float* __restrict__ t,
                                            float* __restrict__ partials, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    const int64_t quads = n / 4;
    const float4* p4 = reinterpret_cast<const float4*>(p);
    const float4* t4 = reinterpret_cast<const float4*>(t);
    float sum = 0.0f;
    for (int64_t i = first; i < quads; i += stride) {
        const float4 a = __ldg(p4 + i), b = __ldg(t4 + i);
        const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
        sum = fmaf(dx, dx, sum);
        sum = fmaf(dy, dy, sum);
        sum = fmaf(dz, dz, sum);
        sum = fmaf(dw, dw, sum);
    }
    for (int64_t i = quads * 4 + first; i < n; i += stride) {
        const float d = p[i] - t[i];
        sum = fmaf(d, d, sum);
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void finish_mean(const float* __restrict__ partials, int blocks, double count, float* __restrict__ out) {
    __shared__ double sums[kThreads];
    double sum = 0.0;
    for (int i = threadIdx.x; i < blocks; i += kThreads) sum += partials[i];
    sums[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half >>= 1) {
        if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = static_cast<float>(sums[0] / count);
}

}  // namespace

extern "C" int mse_partial_blocks(int multiprocessors) { return multiprocessors * 8; }

extern "C" void launch_mse(const float* p, const float* t, float* partials, int blocks, float* out, int64_t n,
                           cudaStream_t stream) {
    squared_difference_partials<<<blocks, kThreads, 0, stream>>>(p, t, partials, n);
    finish_mean<<<1, kThreads, 0, stream>>>(partials, blocks, static_cast<double>(n), out);
}
