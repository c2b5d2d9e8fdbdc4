// ema_inplace.cu -- avg = decay * avg + (1 - decay) * x, written into avg (contiguous fp32, same size).
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float ema(float a, float v, float decay, float rest) { return a * decay + v * rest; }

__global__ void __launch_bounds__(kThreads) ema_inplace_kernel(float* __restrict__ avg, const float* __restrict__ x,
                                                               int64_t n, float decay, bool vec) {
    const float rest = 1.0f - decay;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    int64_t done = 0;
    if (vec) {
        float4* a4 = reinterpret_cast<float4*>(avg);
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int64_t n4 = n / 4;
        for (int64_t i = first; i < n4; i += stride) {
            float4 a = a4[i];
            const float4 v = __ldcs(x4 + i);
            a.x = ema(a.x, v.x, decay, rest);
            a.y = ema(a.y, v.y, decay, rest);
            a.z = ema(a.z, v.z, decay, rest);
            a.w = ema(a.w, v.w, decay, rest);
            a4[i] = a;
        }
        done = 4 * n4;
    }
    for (int64_t i = done + first; i < n; i += stride) avg[i] = ema(avg[i], x[i], decay, rest);
}

}  // namespace

extern "C" void launch_ema_inplace(float* avg, const float* x, int64_t n, float decay, int sms, cudaStream_t stream) {
    if (n <= 0) return;
    const bool vec = reinterpret_cast<uintptr_t>(avg) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    int64_t blocks = ((vec ? n / 4 : n) + kThreads - 1) / kThreads;
    const int64_t cap = static_cast<int64_t>(sms > 0 ? sms : 132) * 8;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    ema_inplace_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(avg, x, n, decay, vec);
}
