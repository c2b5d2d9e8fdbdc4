// gated_chain.cu -- y[r, :] = gate[r] * clamp(gelu_erf(x[r, :] * scale + shift), lo, hi) in one float4
// grid-stride pass. A row whose gate is 0 is written as zeros without reading x: a call with fewer open
// gates reads less, so the kernel's time follows each call's share of open rows (the task draws it per
// call). Rows whose length is not a multiple of 4, or unaligned tensors, take the scalar loop.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float chain(float v, float scale, float shift, float lo, float hi) {
    const float u = fmaf(v, scale, shift);
    return fminf(fmaxf(0.5f * u * (1.0f + erff(u * 0.70710678118654752f)), lo), hi);
}

__global__ void __launch_bounds__(kThreads)
gated_vec4(const float4* __restrict__ x, const float* __restrict__ gate, float4* __restrict__ y, int64_t total4,
           int64_t row4, float scale, float shift, float lo, float hi) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total4; i += stride) {
        const float g = __ldg(gate + i / row4);
        float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (g != 0.0f) {
            const float4 v = __ldcs(x + i);
            o.x = g * chain(v.x, scale, shift, lo, hi);
            o.y = g * chain(v.y, scale, shift, lo, hi);
            o.z = g * chain(v.z, scale, shift, lo, hi);
            o.w = g * chain(v.w, scale, shift, lo, hi);
        }
        __stcs(y + i, o);
    }
}

__global__ void __launch_bounds__(kThreads)
gated_scalar(const float* __restrict__ x, const float* __restrict__ gate, float* __restrict__ y, int64_t total,
             int64_t row, float scale, float shift, float lo, float hi) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        const float g = gate[i / row];
        y[i] = g != 0.0f ? g * chain(x[i], scale, shift, lo, hi) : 0.0f;
    }
}

int resident_blocks() {
    static int blocks = [] {
        int dev = 0, sms = 0, per_sm = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gated_vec4, kThreads, 0);
        return (sms > 0 ? sms : 132) * (per_sm > 0 ? per_sm : 4);
    }();
    return blocks;
}

}  // namespace

extern "C" void launch_gated_chain(const float* x, const float* gate, float* y, int64_t rows, int64_t cols,
                                   float scale, float shift, float lo, float hi, cudaStream_t stream) {
    const int64_t total = rows * cols;
    if (total <= 0) return;
    const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    const int64_t work = vec ? total / 4 : total;
    int64_t blocks = (work + kThreads - 1) / kThreads;
    if (blocks > resident_blocks()) blocks = resident_blocks();
    if (vec) {
        gated_vec4<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
            reinterpret_cast<const float4*>(x), gate, reinterpret_cast<float4*>(y), total / 4, cols / 4, scale, shift,
            lo, hi);
    } else {
        gated_scalar<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, gate, y, total, cols, scale, shift, lo,
                                                                             hi);
    }
}
