// new_gelu.cu -- y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) over a contiguous fp32 tensor.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;
constexpr float kSqrt2OverPi = 0.7978845608028654f;

__device__ __forceinline__ float new_gelu(float v) {
    const float inner = kSqrt2OverPi * (v + 0.044715f * (v * v * v));
    return 0.5f * v * (1.0f + tanhf(inner));
}

__global__ void __launch_bounds__(kThreads) new_gelu_kernel(const float* __restrict__ x, float* __restrict__ y,
                                                            int64_t n, bool vec) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    int64_t done = 0;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        float4* y4 = reinterpret_cast<float4*>(y);
        const int64_t n4 = n / 4;
        for (int64_t i = first; i < n4; i += stride) {
            const float4 v = __ldcs(x4 + i);
            __stcs(y4 + i, make_float4(new_gelu(v.x), new_gelu(v.y), new_gelu(v.z), new_gelu(v.w)));
        }
        done = 4 * n4;
    }
    for (int64_t i = done + first; i < n; i += stride) y[i] = new_gelu(x[i]);
}

}  // namespace

extern "C" void launch_new_gelu(const float* x, float* y, int64_t n, int sms, cudaStream_t stream) {
    if (n <= 0) return;
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    int64_t blocks = ((vec ? n / 4 : n) + kThreads - 1) / kThreads;
    const int64_t cap = static_cast<int64_t>(sms > 0 ? sms : 132) * 8;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    new_gelu_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n, vec);
}
