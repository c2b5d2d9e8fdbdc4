// elementwise_chain.cu -- BROKEN ON PURPOSE: does not compile.
// y = clamp(gelu_erf(x * scale + shift), lo, hi), one float4 per thread. The constant is declared as
// kRsqrt2 but used as kInvSqrt2 (an undeclared identifier), so nvcc stops with an error.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr float kRsqrt2 = 0.7071067811865476f;  // 1 / sqrt(2)

__device__ __forceinline__ float chain(float v, float scale, float shift, float lo, float hi) {
    v = fmaf(v, scale, shift);
    v = 0.5f * v * (1.0f + erff(v * kInvSqrt2));  // BUG: undeclared identifier (the constant is kRsqrt2)
    return fminf(fmaxf(v, lo), hi);
}

__global__ void __launch_bounds__(kThreads)
elementwise_chain_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, float scale, float shift,
                         float lo, float hi) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // index of a float4
    if (4 * i + 3 < n) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x = chain(v.x, scale, shift, lo, hi);
        v.y = chain(v.y, scale, shift, lo, hi);
        v.z = chain(v.z, scale, shift, lo, hi);
        v.w = chain(v.w, scale, shift, lo, hi);
        reinterpret_cast<float4*>(y)[i] = v;
    } else {
        for (int64_t k = 4 * i; k < n; ++k) y[k] = chain(x[k], scale, shift, lo, hi);
    }
}

}  // namespace

extern "C" void launch_elementwise_chain(const float* x, float* y, int64_t n, float scale, float shift,
                                         float lo, float hi, cudaStream_t stream) {
    if (n <= 0) return;
    const int64_t blocks = ((n + 3) / 4 + kThreads - 1) / kThreads;
    elementwise_chain_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n, scale, shift, lo, hi);
}
