// scale_shift.cu -- y = x * scale + shift with float4 accesses in a grid-stride loop (scalar tail).
// The kernel is fine; the submission is rejected because model_new.py finishes the job with PyTorch ops.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
scale_shift_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n, int64_t n4, float scale,
                   float shift) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (int64_t i = tid; i < n4; i += stride) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x = fmaf(v.x, scale, shift);
        v.y = fmaf(v.y, scale, shift);
        v.z = fmaf(v.z, scale, shift);
        v.w = fmaf(v.w, scale, shift);
        reinterpret_cast<float4*>(y)[i] = v;
    }
    for (int64_t i = 4 * n4 + tid; i < n; i += stride) y[i] = fmaf(x[i], scale, shift);
}

}  // namespace

extern "C" void launch_scale_shift(const float* x, float* y, int64_t n, float scale, float shift,
                                   cudaStream_t stream) {
    if (n <= 0) return;
    const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int64_t n4 = aligned ? n / 4 : 0;
    int64_t blocks = ((n4 > 0 ? n4 : n) + kThreads - 1) / kThreads;
    if (blocks > 4096) blocks = 4096;
    scale_shift_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, n, n4, scale, shift);
}
