// gelu.cu -- exact GELU in place: y = 0.5 * y * (1 + erf(y / sqrt(2))), as F.gelu's default ("none").
// Float4 grid-stride loop when the buffer is 16-byte aligned and its length a multiple of 4, scalar otherwise.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void gelu_vec4(float4* __restrict__ y, int64_t n4) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = y[i];
        v.x = gelu(v.x);
        v.y = gelu(v.y);
        v.z = gelu(v.z);
        v.w = gelu(v.w);
        y[i] = v;
    }
}

__global__ void gelu_scalar(float* __restrict__ y, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = gelu(y[i]);
}

}  // namespace

extern "C" void launch_gelu_inplace(float* y, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    constexpr int kThreads = 256;
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    const int64_t max_blocks = static_cast<int64_t>(sms > 0 ? sms : 132) * 8;
    const bool vec = n % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int64_t slots = vec ? n / 4 : n;
    int64_t blocks = (slots + kThreads - 1) / kThreads;
    if (blocks > max_blocks) blocks = max_blocks;
    if (vec)
        gelu_vec4<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(reinterpret_cast<float4*>(y), slots);
    else
        gelu_scalar<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(y, slots);
}
