// row_max.cu -- (values[r], indices[r]) = (max_c x[r][c], its first index) for a contiguous (rows, cols) fp32 x.
// One warp per row (8 rows per 256-thread block); NaN counts as the largest, as torch.max does.
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;

__device__ __forceinline__ bool better(float v, int i, float best, int at) {
    if (isnan(v)) return !isnan(best) || i < at;
    if (isnan(best)) return false;
    return v > best || (v == best && i < at);
}

__global__ void __launch_bounds__(kThreads) row_max_kernel(const float* __restrict__ x, float* __restrict__ values,
                                                           int64_t* __restrict__ indices, int64_t rows, int cols,
                                                           bool vec) {
    const int lane = threadIdx.x & 31;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float best = -INFINITY;
    int at = cols;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        for (int c = lane; c < cols / 4; c += 32) {
            const float4 v = __ldcs(x4 + c);
            const float s[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (better(s[k], 4 * c + k, best, at)) best = s[k], at = 4 * c + k;
        }
    } else {
        for (int c = lane; c < cols; c += 32)
            if (better(xr[c], c, best, at)) best = xr[c], at = c;
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float ob = __shfl_xor_sync(0xffffffffu, best, offset);
        const int oa = __shfl_xor_sync(0xffffffffu, at, offset);
        if (better(ob, oa, best, at)) best = ob, at = oa;
    }
    if (lane == 0) {
        values[row] = at < cols ? best : xr[0];
        indices[row] = at < cols ? at : 0;
    }
}

}  // namespace

extern "C" void launch_row_max(const float* x, float* values, int64_t* indices, int64_t rows, int cols,
                               cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    row_max_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, values, indices, rows, cols, vec);
}
