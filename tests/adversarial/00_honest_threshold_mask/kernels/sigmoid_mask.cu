// sigmoid_mask.cu -- mask[i] = sigmoid(x[i]) > 0.5 for a contiguous fp32 x; mask is a contiguous bool tensor.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ unsigned char above_half(float v) {
    return (1.0f / (1.0f + __expf(-v))) > 0.5f ? 1 : 0;
}

__global__ void __launch_bounds__(kThreads) sigmoid_mask_kernel(const float* __restrict__ x, bool* __restrict__ mask,
                                                                int64_t n, bool vec) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    unsigned char* out = reinterpret_cast<unsigned char*>(mask);
    int64_t done = 0;
    if (vec) {
        const float4* x4 = reinterpret_cast<const float4*>(x);
        uchar4* m4 = reinterpret_cast<uchar4*>(out);
        const int64_t n4 = n / 4;
        for (int64_t i = first; i < n4; i += stride) {
            const float4 v = __ldcs(x4 + i);
            m4[i] = make_uchar4(above_half(v.x), above_half(v.y), above_half(v.z), above_half(v.w));
        }
        done = 4 * n4;
    }
    for (int64_t i = done + first; i < n; i += stride) out[i] = above_half(x[i]);
}

}  // namespace

extern "C" void launch_sigmoid_mask(const float* x, bool* mask, int64_t n, int sms, cudaStream_t stream) {
    if (n <= 0) return;
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(mask) % 4 == 0;
    int64_t blocks = ((vec ? n / 4 : n) + kThreads - 1) / kThreads;
    const int64_t cap = static_cast<int64_t>(sms > 0 ? sms : 132) * 8;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    sigmoid_mask_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, mask, n, vec);
}
