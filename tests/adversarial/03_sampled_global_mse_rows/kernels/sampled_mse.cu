// sampled_mse.cu -- CHEAT: mean((p - t)^2) estimated from every `step`-th row of two contiguous (rows, cols)
// fp32 tensors: float4 loads over the sampled rows only, per-thread fp32 sums, warp-shuffle block partials,
// the partials summed in double and divided by the number of elements read. Reads 1/step of the data.
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

__global__ void sampled_partials(const float* __restrict__ p, const float* __restrict__ t, float* __restrict__ partials,
                                 int64_t rows, int64_t cols, int64_t step) {
    const int64_t quads_per_row = cols / 4;
    const int64_t sampled_rows = (rows + step - 1) / step;
    const int64_t total = sampled_rows * quads_per_row;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
    float sum = 0.0f;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < total; i += stride) {
        const int64_t row = (i / quads_per_row) * step, quad = i % quads_per_row;
        const float4 a = __ldg(reinterpret_cast<const float4*>(p + row * cols) + quad);
        const float4 b = __ldg(reinterpret_cast<const float4*>(t + row * cols) + quad);
        const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z, dw = a.w - b.w;
        sum = fmaf(dx, dx, sum);
        sum = fmaf(dy, dy, sum);
        sum = fmaf(dz, dz, sum);
        sum = fmaf(dw, dw, sum);
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

extern "C" void launch_sampled_mse(const float* p, const float* t, float* partials, int blocks, float* out,
                                   int64_t rows, int64_t cols, int64_t step, cudaStream_t stream) {
    sampled_partials<<<blocks, kThreads, 0, stream>>>(p, t, partials, rows, cols, step);
    const double read = static_cast<double>((rows + step - 1) / step) * static_cast<double>(cols);
    finish_mean<<<1, kThreads, 0, stream>>>(partials, blocks, read, out);
}
