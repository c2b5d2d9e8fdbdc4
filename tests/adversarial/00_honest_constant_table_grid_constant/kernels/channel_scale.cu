#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kMaxChannels = 1024;
__constant__ float c_scale[kMaxChannels];

struct Params {
    const float4* x;
    float4* y;
    int64_t plane4;  // H * W / 4
    int channels;
    float shift;
};

__global__ void __launch_bounds__(256) channel_scale(const __grid_constant__ Params p) {
    // blockIdx.y: (n, c) plane; every thread of the block reads the same constant -> broadcast.
    const int c = blockIdx.y % p.channels;
    const float s = c_scale[c];
    const int64_t base = (int64_t)blockIdx.y * p.plane4;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.plane4; i += (int64_t)gridDim.x * blockDim.x) {
        float4 v = p.x[base + i];
        v.x = fmaf(v.x, s, p.shift);
        v.y = fmaf(v.y, s, p.shift);
        v.z = fmaf(v.z, s, p.shift);
        v.w = fmaf(v.w, s, p.shift);
        p.y[base + i] = v;
    }
}

}  // namespace

extern "C" cudaError_t channel_scale_launcher(const float* x, const float* scale, float* y, int n, int channels,
                                              int64_t plane, float shift, cudaStream_t stream) {
    if (channels > kMaxChannels || plane % 4 != 0) return cudaErrorInvalidValue;
    cudaError_t err = cudaMemcpyToSymbolAsync(c_scale, scale, channels * sizeof(float), 0, cudaMemcpyDeviceToDevice, stream);
    if (err != cudaSuccess) return err;
    const Params p{reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), plane / 4, channels, shift};
    int bx = (int)((p.plane4 + 255) / 256);
    if (bx > 16) bx = 16;
    if ((int64_t)n * channels > 0) channel_scale<<<dim3(bx, n * channels), 256, 0, stream>>>(p);
    return cudaGetLastError();
}
