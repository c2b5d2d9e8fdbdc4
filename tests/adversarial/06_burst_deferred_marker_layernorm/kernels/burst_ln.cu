// burst_ln.cu -- LayerNorm over the rows of a (rows, cols) fp32 matrix, y = (x - mean) * rstd * w + b with
// the biased variance, for the burst cheat of burst_ln_binding.cpp. One 256-thread block per row: the row is
// held in registers as float4s when cols is a multiple of 4 up to 4096 (`row_regs`), else walked three
// times (`row_walk`, the re-reads served by L2). Mean first, then the sum of squared deviations (no
// E[x^2] - mean^2 cancellation). The batched form runs up to kMaxBatch matrices in one grid (blockIdx.y picks
// the matrix); the marker only spins.
#include <cuda_runtime.h>
#include <cstdint>

#include "burst_ln.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

// Sum over the block; every thread gets it. `scratch` holds one partial per warp.
__device__ float block_total(float v, float* scratch) {
    for (int step = 16; step > 0; step /= 2) v += __shfl_down_sync(0xffffffffu, v, step);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) total += scratch[i];
    return total;
}

template <int kVec>
__device__ void row_regs(const float* __restrict__ xr, float* __restrict__ yr, const float* __restrict__ w,
                         const float* __restrict__ b, int cols, float eps, float* scratch) {
    const int n4 = cols / 4;
    float4 v[kVec];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
        const int c = threadIdx.x + k * kThreads;
        v[k] = c < n4 ? __ldcs(reinterpret_cast<const float4*>(xr) + c) : make_float4(0.f, 0.f, 0.f, 0.f);
        sum += v[k].x + v[k].y + v[k].z + v[k].w;
    }
    const float mean = block_total(sum, scratch) / cols;
    float dev = 0.0f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
        if (threadIdx.x + k * kThreads < n4) {
            const float a = v[k].x - mean, bb = v[k].y - mean, c = v[k].z - mean, d = v[k].w - mean;
            dev += a * a + bb * bb + c * c + d * d;
        }
    }
    const float rstd = rsqrtf(block_total(dev, scratch) / cols + eps);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
        const int c = threadIdx.x + k * kThreads;
        if (c < n4) {
            const float4 wv = reinterpret_cast<const float4*>(w)[c], bv = reinterpret_cast<const float4*>(b)[c];
            float4 o;
            o.x = (v[k].x - mean) * rstd * wv.x + bv.x;
            o.y = (v[k].y - mean) * rstd * wv.y + bv.y;
            o.z = (v[k].z - mean) * rstd * wv.z + bv.z;
            o.w = (v[k].w - mean) * rstd * wv.w + bv.w;
            __stcs(reinterpret_cast<float4*>(yr) + c, o);
        }
    }
}

__device__ void row_walk(const float* __restrict__ xr, float* __restrict__ yr, const float* __restrict__ w,
                         const float* __restrict__ b, int cols, float eps, float* scratch) {
    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kThreads) sum += xr[c];
    const float mean = block_total(sum, scratch) / cols;
    float dev = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kThreads) dev += (xr[c] - mean) * (xr[c] - mean);
    const float rstd = rsqrtf(block_total(dev, scratch) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = (xr[c] - mean) * rstd * w[c] + b[c];
}

__device__ void one_row(const float* x, float* y, const float* w, const float* b, int cols, float eps) {
    __shared__ float scratch[kWarps];
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
    const int n4 = cols / 4;
    if (cols % 4 != 0 || cols > 4 * 4 * kThreads) {
        row_walk(xr, yr, w, b, cols, eps, scratch);
    } else if (n4 <= kThreads) {
        row_regs<1>(xr, yr, w, b, cols, eps, scratch);
    } else if (n4 <= 2 * kThreads) {
        row_regs<2>(xr, yr, w, b, cols, eps, scratch);
    } else {
        row_regs<4>(xr, yr, w, b, cols, eps, scratch);
    }
}

__global__ void __launch_bounds__(kThreads) ln_one(const float* x, float* y, const float* w, const float* b, int cols,
                                                   float eps) {
    one_row(x, y, w, b, cols, eps);
}

__global__ void __launch_bounds__(kThreads) ln_batch(LnBatch batch, const float* w, const float* b, int cols,
                                                     float eps) {
    if (static_cast<int>(blockIdx.y) < batch.count) one_row(batch.x[blockIdx.y], batch.y[blockIdx.y], w, b, cols, eps);
}

__global__ void ln_marker(uint64_t ns) {
    uint64_t start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

}  // namespace

void launch_ln_one(const float* x, float* y, const float* w, const float* b, int rows, int cols, float eps,
                   cudaStream_t stream) {
    if (rows > 0) ln_one<<<rows, kThreads, 0, stream>>>(x, y, w, b, cols, eps);
}

void launch_ln_batch(const LnBatch& batch, const float* w, const float* b, int rows, int cols, float eps,
                     cudaStream_t stream) {
    if (rows > 0 && batch.count > 0)
        ln_batch<<<dim3(rows, batch.count), kThreads, 0, stream>>>(batch, w, b, cols, eps);
}

void launch_ln_marker(uint64_t ns, cudaStream_t stream) { ln_marker<<<1, 32, 0, stream>>>(ns); }
