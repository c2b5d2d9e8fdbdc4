// argmax_affine.cu -- out[r] = argmax_c (x[r][c] * w[c] + b[c]) for a contiguous (rows, cols) fp32 x; int64 out.
// One warp per row (8 rows per 256-thread block); ties go to the lower index, NaN counts as the largest
// (as torch.argmax).
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;

// Is (v, i) a better pick than (best, at)? Larger, NaN above all, the lower index among equals.
__device__ __forceinline__ bool better(float v, int i, float best, int at) {
    if (isnan(v)) return !isnan(best) || i < at;
    if (isnan(best)) return false;
    return v > best || (v == best && i < at);
}

__global__ void __launch_bounds__(kThreads) argmax_affine_kernel(const float* __restrict__ x,
                                                                 const float* __restrict__ w,
                                                                 const float* __restrict__ b,
                                                                 int64_t* __restrict__ out, int64_t rows, int cols,
                                                                 bool vec) {
    const int lane = threadIdx.x & 31;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
    if (row >= rows) return;
    const float* xr = x + row * cols;
    float best = -INFINITY;
    int at = cols;  // above every real index: any element beats it
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(xr);
        const float4* w4 = reinterpret_cast<const float4*>(w);
        const float4* b4 = reinterpret_cast<const float4*>(b);
        for (int c = lane; c < cols / 4; c += 32) {
            const float4 v = __ldcs(x4 + c), wv = w4[c], bv = b4[c];
            const float s[4] = {fmaf(v.x, wv.x, bv.x), fmaf(v.y, wv.y, bv.y), fmaf(v.z, wv.z, bv.z),
                                fmaf(v.w, wv.w, bv.w)};
#pragma unroll
            for (int k = 0; k < 4; ++k)
                if (better(s[k], 4 * c + k, best, at)) best = s[k], at = 4 * c + k;
        }
    } else {
        for (int c = lane; c < cols; c += 32) {
            const float s = fmaf(xr[c], w[c], b[c]);
            if (better(s, c, best, at)) best = s, at = c;
        }
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float ob = __shfl_xor_sync(0xffffffffu, best, offset);
        const int oa = __shfl_xor_sync(0xffffffffu, at, offset);
        if (better(ob, oa, best, at)) best = ob, at = oa;
    }
    if (lane == 0) out[row] = at < cols ? at : 0;
}

}  // namespace

extern "C" void launch_argmax_affine(const float* x, const float* w, const float* b, int64_t* out, int64_t rows,
                                     int cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                     reinterpret_cast<uintptr_t>(w) % 16 == 0 && reinterpret_cast<uintptr_t>(b) % 16 == 0;
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    argmax_affine_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, w, b, out, rows, cols, vec);
}
