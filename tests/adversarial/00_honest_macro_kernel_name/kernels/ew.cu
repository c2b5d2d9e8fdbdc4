// ew.cu -- honest: the kernel's name is made by a macro, as generated code often does.
#include <cuda_runtime.h>
#include <cstdint>
#define KERNEL(name) name##_macro_kernel
#define KERNEL_CALL KERNEL(ew)

__device__ __forceinline__ float chain(float v, float scale, float shift, float lo, float hi) {
    v = fmaf(v, scale, shift);
    v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));  // exact GELU: x * Phi(x)
    return fminf(fmaxf(v, lo), hi);
}

__global__ void KERNEL(ew)(const float* __restrict__ x, float* __restrict__ y, int64_t n, float scale, float shift, float lo, float hi) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = chain(x[i], scale, shift, lo, hi);
}

extern "C" void launch_ew(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                          int threads, cudaStream_t stream) {
    if (n <= 0) return;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 132 * 16) blocks = 132 * 16;
    KERNEL_CALL<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(x, y, n, scale, shift, lo, hi);
}
