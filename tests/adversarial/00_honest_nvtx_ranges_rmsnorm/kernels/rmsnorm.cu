// rmsnorm.cu -- y = x * rsqrt(mean(x^2) + eps) * w over the last dimension of a row-major (rows, cols) matrix.
//
// One block of 256 threads per row, cols % 4 == 0 and cols <= 256 * 4 * kMaxVecs. The row is read once into
// registers as float4s; each thread's sum of squares is reduced across its warp with shuffles, the 8 warp
// sums through shared memory by the first warp, and the scale broadcast back through shared memory.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxVecs = 8;  // float4s per thread: rows of up to 8192 floats

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void __launch_bounds__(kThreads)
rmsnorm_rows(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int cols, float eps) {
    __shared__ float partial[kWarps];
    __shared__ float scale;
    const int cols4 = cols / 4;
    const float4* xr = reinterpret_cast<const float4*>(x + static_cast<int64_t>(blockIdx.x) * cols);
    float4* yr = reinterpret_cast<float4*>(y + static_cast<int64_t>(blockIdx.x) * cols);
    const float4* w4 = reinterpret_cast<const float4*>(w);

    float4 v[kMaxVecs];
    float sq = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxVecs; ++j) {
        const int c = threadIdx.x + j * kThreads;
        v[j] = c < cols4 ? xr[c] : make_float4(0.f, 0.f, 0.f, 0.f);
        sq += (v[j].x * v[j].x + v[j].y * v[j].y) + (v[j].z * v[j].z + v[j].w * v[j].w);
    }
    sq = warp_sum(sq);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) partial[warp] = sq;
    __syncthreads();
    if (warp == 0) {
        float total = lane < kWarps ? partial[lane] : 0.0f;
        total = warp_sum(total);
        if (lane == 0) scale = rsqrtf(total / cols + eps);
    }
    __syncthreads();
    const float s = scale;
#pragma unroll
    for (int j = 0; j < kMaxVecs; ++j) {
        const int c = threadIdx.x + j * kThreads;
        if (c < cols4) {
            const float4 g = w4[c];
            yr[c] = make_float4(v[j].x * s * g.x, v[j].y * s * g.y, v[j].z * s * g.z, v[j].w * s * g.w);
        }
    }
}

}  // namespace

extern "C" void launch_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int cols, float eps,
                               cudaStream_t stream) {
    if (rows <= 0) return;
    rmsnorm_rows<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, w, y, cols, eps);
}
