// relu_inplace.cu -- x = max(x, 0), in place, over a contiguous fp32 tensor.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

// Grid-stride over float4s when x is 16-byte aligned, then the tail element by element.
__global__ void __launch_bounds__(kThreads) relu_inplace_kernel(float* __restrict__ x, int64_t n, bool vec) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    int64_t done = 0;
    if (vec) {
        float4* x4 = reinterpret_cast<float4*>(x);
        const int64_t n4 = n / 4;
        for (int64_t i = first; i < n4; i += stride) {
            float4 v = x4[i];
            v.x = fmaxf(v.x, 0.f);
            v.y = fmaxf(v.y, 0.f);
            v.z = fmaxf(v.z, 0.f);
            v.w = fmaxf(v.w, 0.f);
            x4[i] = v;
        }
        done = 4 * n4;
    }
    for (int64_t i = done + first; i < n; i += stride) x[i] = fmaxf(x[i], 0.f);
}

}  // namespace

extern "C" void launch_relu_inplace(float* x, int64_t n, int sms, cudaStream_t stream) {
    if (n <= 0) return;
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0;
    int64_t blocks = ((vec ? n / 4 : n) + kThreads - 1) / kThreads;
    const int64_t cap = static_cast<int64_t>(sms > 0 ? sms : 132) * 8;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    relu_inplace_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, n, vec);
}
