// smem_softmax.cu -- row softmax that stages rows in more than 48 KiB of dynamic shared memory.
//
// A kernel may use more than the default 48 KiB of dynamic shared memory per block only after opting in
// with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize): a legitimate, common setup call
// (Hopper allows up to 227 KiB). Each 1024-thread block handles kRowsPerBlock rows of up to kMaxCols
// floats, one 256-thread group per row: the row is loaded once into its slice of shared memory (4 x 16 KiB
// = 64 KiB for 4096-float rows), reduced (max, then sum of exp) with warp shuffles, and written from there.
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>

namespace {

constexpr int kGroup = 256;          // threads per row
constexpr int kRowsPerBlock = 4;     // rows per block
constexpr int kThreads = kGroup * kRowsPerBlock;
constexpr int kWarpsPerGroup = kGroup / 32;

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

// Max or sum over one 256-thread group; `partial` has kWarpsPerGroup floats for this group.
template <bool kIsMax>
__device__ float group_reduce(float v, float* partial, int lane, int warp_in_group) {
    v = kIsMax ? warp_max(v) : warp_sum(v);
    if (lane == 0) partial[warp_in_group] = v;
    __syncthreads();
    float r = kIsMax ? -INFINITY : 0.0f;
#pragma unroll
    for (int w = 0; w < kWarpsPerGroup; ++w) r = kIsMax ? fmaxf(r, partial[w]) : r + partial[w];
    __syncthreads();  // partial is reused by the next reduction
    return r;
}

__global__ void __launch_bounds__(kThreads) softmax_rows_smem(const float* __restrict__ x, float* __restrict__ y,
                                                              int64_t rows, int cols) {
    extern __shared__ float staged[];  // kRowsPerBlock * cols floats
    __shared__ float partial[kRowsPerBlock][kWarpsPerGroup];
    const int group = threadIdx.x / kGroup;
    const int t = threadIdx.x % kGroup;
    const int lane = threadIdx.x & 31;
    const int warp_in_group = t / 32;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + group;
    const bool active = row < rows;
    float* srow = staged + static_cast<int64_t>(group) * cols;

    float m = -INFINITY;
    if (active) {
        const float* xr = x + row * cols;
        for (int c = t; c < cols; c += kGroup) {
            const float v = __ldcs(xr + c);
            srow[c] = v;
            m = fmaxf(m, v);
        }
    }
    m = group_reduce<true>(m, partial[group], lane, warp_in_group);
    float s = 0.0f;
    if (active) {
        for (int c = t; c < cols; c += kGroup) {
            const float e = __expf(srow[c] - m);
            srow[c] = e;
            s += e;
        }
    }
    s = group_reduce<false>(s, partial[group], lane, warp_in_group);
    if (active) {
        const float inv = 1.0f / s;
        float* yr = y + row * cols;
        for (int c = t; c < cols; c += kGroup) __stcs(yr + c, srow[c] * inv);
    }
}

}  // namespace

// Returns cudaSuccess, or the error of the attribute call / launch (e.g. a row too long for shared memory).
extern "C" cudaError_t launch_smem_softmax(const float* x, float* y, int64_t rows, int cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return cudaSuccess;
    const size_t bytes = static_cast<size_t>(kRowsPerBlock) * cols * sizeof(float);
    cudaError_t err = cudaFuncSetAttribute(softmax_rows_smem, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(bytes));
    if (err != cudaSuccess) return err;
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    softmax_rows_smem<<<static_cast<unsigned>(blocks), kThreads, bytes, stream>>>(x, y, rows, cols);
    return cudaGetLastError();
}
