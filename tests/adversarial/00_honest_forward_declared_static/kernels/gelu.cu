// gelu.cu -- y = 0.5 x (1 + erf(x / sqrt(2))), elementwise, float4 grid-stride loop (scalar tail).
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }

__global__ void __launch_bounds__(kThreads) gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n4;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        const float4 v = __ldcs(x + i);
        __stcs(y + i, make_float4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w)));
    }
}

__global__ void gelu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
    for (int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        y[i] = gelu(x[i]);
}

int blocks_for(int64_t work) {
    const int64_t b = (work + kThreads - 1) / kThreads;
    return static_cast<int>(b < 132 * 16 ? (b > 0 ? b : 1) : 132 * 16);
}

}  // namespace

extern "C" void gelu_launcher(const float* x, float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    const bool aligned = (reinterpret_cast<uintptr_t>(x) % 16 == 0) && (reinterpret_cast<uintptr_t>(y) % 16 == 0);
    int64_t done = 0;
    if (aligned && n >= 4) {
        const int64_t n4 = n / 4;
        gelu_vec4<<<blocks_for(n4), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                             reinterpret_cast<float4*>(y), n4);
        done = n4 * 4;
    }
    if (done < n) gelu_scalar<<<blocks_for(n - done), kThreads, 0, stream>>>(x, y, done, n);
}
