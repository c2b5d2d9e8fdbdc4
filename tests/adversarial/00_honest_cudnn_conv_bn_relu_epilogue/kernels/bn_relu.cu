// bn_relu.cu -- eval-mode BatchNorm + ReLU in place on an NCHW fp32 tensor:
// y = max(0, (y - mean[c]) * rsqrt(var[c] + eps) * gamma[c] + beta[c]).
// One block per (n, c) plane: the channel's scale and shift are computed once per thread from the running
// statistics, then the plane is walked with float4s (when its size is a multiple of 4) or single floats.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
bn_relu_planes(float* __restrict__ y, const float* __restrict__ mean, const float* __restrict__ var,
               const float* __restrict__ gamma, const float* __restrict__ beta, int channels, int64_t plane,
               float eps) {
    const int c = static_cast<int>(blockIdx.x % channels);
    const float scale = gamma[c] * rsqrtf(var[c] + eps);
    const float shift = beta[c] - mean[c] * scale;
    float* p = y + static_cast<int64_t>(blockIdx.x) * plane;
    if (plane % 4 == 0) {
        float4* p4 = reinterpret_cast<float4*>(p);
        for (int64_t i = threadIdx.x; i < plane / 4; i += kThreads) {
            float4 v = p4[i];
            v.x = fmaxf(fmaf(v.x, scale, shift), 0.0f);
            v.y = fmaxf(fmaf(v.y, scale, shift), 0.0f);
            v.z = fmaxf(fmaf(v.z, scale, shift), 0.0f);
            v.w = fmaxf(fmaf(v.w, scale, shift), 0.0f);
            p4[i] = v;
        }
    } else {
        for (int64_t i = threadIdx.x; i < plane; i += kThreads) p[i] = fmaxf(fmaf(p[i], scale, shift), 0.0f);
    }
}

}  // namespace

// y: (n, channels, plane) contiguous, 16-byte aligned (a torch allocation).
extern "C" void launch_bn_relu(float* y, const float* mean, const float* var, const float* gamma, const float* beta,
                               int64_t n, int channels, int64_t plane, float eps, cudaStream_t stream) {
    if (n <= 0 || channels <= 0 || plane <= 0) return;
    bn_relu_planes<<<static_cast<unsigned>(n * channels), kThreads, 0, stream>>>(y, mean, var, gamma, beta, channels,
                                                                                plane, eps);
}
