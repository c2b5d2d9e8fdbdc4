// row_softmax.cu -- numerically stable softmax over each row of a (rows, cols) fp32 matrix.
// One 256-thread block per row. Fast path (cols % 4 == 0, cols <= 8192): each thread loads its share of
// the row once as float4s into registers, then block-reduces the max and the sum of exp(x - max) with
// warp shuffles, and writes exp(x - max) / sum. Other shapes use a generic two-pass kernel (online
// max/sum, then a write pass whose re-read of the row mostly hits L2).
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Block-wide max or sum; every thread gets the result. `smem` holds one float per warp.
template <bool kIsMax>
__device__ __forceinline__ float block_reduce(float v, float* smem) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = kIsMax ? warp_max(v) : warp_sum(v);
    __syncthreads();  // smem may still be read by a previous reduction
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < kWarps ? smem[lane] : (kIsMax ? -INFINITY : 0.0f);
    return kIsMax ? warp_max(v) : warp_sum(v);
}

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

// Fast path: each thread keeps kVecs float4s of the row in registers (row length <= 4 * kVecs * kThreads).
template <int kVecs>
__global__ void __launch_bounds__(kThreads) softmax_rows_registers(const float* __restrict__ x,
                                                                   float* __restrict__ y, int cols) {
    __shared__ float smem[kWarps];
    const int cols4 = cols / 4;
    const float4* xr = reinterpret_cast<const float4*>(x + static_cast<int64_t>(blockIdx.x) * cols);
    float4* yr = reinterpret_cast<float4*>(y + static_cast<int64_t>(blockIdx.x) * cols);

    float4 v[kVecs];
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
        const int c = threadIdx.x + j * kThreads;
        v[j] = c < cols4 ? __ldcs(xr + c) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        m = fmaxf(m, max4(v[j]));
    }
    m = block_reduce<true>(m, smem);

    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {  // padding lanes hold -inf, so they contribute exp(-inf) = 0
        v[j].x = __expf(v[j].x - m);
        v[j].y = __expf(v[j].y - m);
        v[j].z = __expf(v[j].z - m);
        v[j].w = __expf(v[j].w - m);
        s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    }
    s = block_reduce<false>(s, smem);

    const float inv = 1.0f / s;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
        const int c = threadIdx.x + j * kThreads;
        if (c < cols4) __stcs(yr + c, make_float4(v[j].x * inv, v[j].y * inv, v[j].z * inv, v[j].w * inv));
    }
}

// Generic path: any cols. Pass 1 keeps a running (max, sum) per thread (online softmax), pass 2 writes.
__global__ void __launch_bounds__(kThreads) softmax_rows_generic(const float* __restrict__ x,
                                                                 float* __restrict__ y, int cols) {
    __shared__ float smem[kWarps];
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* yr = y + static_cast<int64_t>(blockIdx.x) * cols;

    float m = -INFINITY, s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kThreads) {
        const float v = xr[c];
        if (v > m) {
            s = s * __expf(m - v) + 1.0f;  // rescale the old sum to the new max
            m = v;
        } else {
            s += __expf(v - m);
        }
    }
    const float row_max = block_reduce<true>(m, smem);
    s = (m == -INFINITY) ? 0.0f : s * __expf(m - row_max);
    const float inv = 1.0f / block_reduce<false>(s, smem);

    for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = __expf(xr[c] - row_max) * inv;
}

}  // namespace

extern "C" void launch_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const dim3 grid(static_cast<unsigned>(rows));
    const int c = static_cast<int>(cols);
    const bool vec_ok = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int64_t vecs_per_thread = (cols / 4 + kThreads - 1) / kThreads;
    if (vec_ok && vecs_per_thread <= 1) {
        softmax_rows_registers<1><<<grid, kThreads, 0, stream>>>(x, y, c);
    } else if (vec_ok && vecs_per_thread <= 2) {
        softmax_rows_registers<2><<<grid, kThreads, 0, stream>>>(x, y, c);
    } else if (vec_ok && vecs_per_thread <= 4) {
        softmax_rows_registers<4><<<grid, kThreads, 0, stream>>>(x, y, c);
    } else if (vec_ok && vecs_per_thread <= 8) {
        softmax_rows_registers<8><<<grid, kThreads, 0, stream>>>(x, y, c);
    } else {
        softmax_rows_generic<<<grid, kThreads, 0, stream>>>(x, y, c);
    }
}
