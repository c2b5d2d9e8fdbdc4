// above_row_mean.cu -- mask[r][c] = x[r][c] > mean(x[r][:]) for a contiguous (rows, cols) fp32 x.
// One 256-thread block per row. Fast path (cols % 4 == 0, cols <= 4 * kVecs * 256): the row in registers
// as float4s; otherwise the row is read twice (the second read mostly from L2).
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kVecs = 4;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float block_sum(float v) {
    __shared__ float smem[kWarps];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < kWarps ? smem[lane] : 0.0f;
    return warp_sum(v);
}

__global__ void __launch_bounds__(kThreads) above_mean_registers(const float* __restrict__ x,
                                                                 bool* __restrict__ mask, int cols) {
    const int cols4 = cols / 4;
    const float4* xr = reinterpret_cast<const float4*>(x + static_cast<int64_t>(blockIdx.x) * cols);
    uchar4* mr = reinterpret_cast<uchar4*>(reinterpret_cast<unsigned char*>(mask) + static_cast<int64_t>(blockIdx.x) * cols);
    float4 v[kVecs];
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
        const int c = threadIdx.x + j * kThreads;
        v[j] = c < cols4 ? __ldcs(xr + c) : make_float4(0.f, 0.f, 0.f, 0.f);
        s += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    }
    const float mean = block_sum(s) / static_cast<float>(cols);
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
        const int c = threadIdx.x + j * kThreads;
        if (c < cols4) mr[c] = make_uchar4(v[j].x > mean, v[j].y > mean, v[j].z > mean, v[j].w > mean);
    }
}

__global__ void __launch_bounds__(kThreads) above_mean_generic(const float* __restrict__ x, bool* __restrict__ mask,
                                                               int cols) {
    const float* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
    unsigned char* mr = reinterpret_cast<unsigned char*>(mask) + static_cast<int64_t>(blockIdx.x) * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += kThreads) s += xr[c];
    const float mean = block_sum(s) / static_cast<float>(cols);
    for (int c = threadIdx.x; c < cols; c += kThreads) mr[c] = xr[c] > mean;
}

}  // namespace

extern "C" void launch_above_row_mean(const float* x, bool* mask, int64_t rows, int cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(mask) % 4 == 0;
    if (aligned && cols % 4 == 0 && cols <= 4 * kVecs * kThreads)
        above_mean_registers<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, mask, cols);
    else
        above_mean_generic<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, mask, cols);
}
