// bias_relu_nchw.cu -- convolution epilogue: y[n, k, :, :] = max(y[n, k, :, :] + bias[k], 0) in place.
// One block per group of (n, k) planes; inside a plane consecutive threads touch consecutive float4s.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
bias_relu_planes_vec4(float4* __restrict__ y, const float* __restrict__ bias, int64_t planes, int64_t channels,
                      int64_t plane4) {
    for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
        const float b = __ldg(bias + plane % channels);
        float4* p = y + plane * plane4;
        for (int64_t i = threadIdx.x; i < plane4; i += kThreads) {
            float4 v = p[i];
            v.x = fmaxf(v.x + b, 0.0f);
            v.y = fmaxf(v.y + b, 0.0f);
            v.z = fmaxf(v.z + b, 0.0f);
            v.w = fmaxf(v.w + b, 0.0f);
            p[i] = v;
        }
    }
}

__global__ void __launch_bounds__(kThreads)
bias_relu_planes_scalar(float* __restrict__ y, const float* __restrict__ bias, int64_t planes, int64_t channels,
                        int64_t plane_size) {
    for (int64_t plane = blockIdx.x; plane < planes; plane += gridDim.x) {
        const float b = __ldg(bias + plane % channels);
        float* p = y + plane * plane_size;
        for (int64_t i = threadIdx.x; i < plane_size; i += kThreads) p[i] = fmaxf(p[i] + b, 0.0f);
    }
}

}  // namespace

extern "C" void launch_bias_relu_nchw(float* y, const float* bias, int64_t n, int64_t channels, int64_t plane_size,
                                      cudaStream_t stream) {
    const int64_t planes = n * channels;
    if (planes <= 0 || plane_size <= 0) return;
    const unsigned blocks = static_cast<unsigned>(planes < 65535 * 4 ? planes : 65535 * 4);
    if (plane_size % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0) {
        bias_relu_planes_vec4<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<float4*>(y), bias, planes, channels,
                                                               plane_size / 4);
    } else {
        bias_relu_planes_scalar<<<blocks, kThreads, 0, stream>>>(y, bias, planes, channels, plane_size);
    }
}
