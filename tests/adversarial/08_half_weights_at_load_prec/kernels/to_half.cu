// to_half.cu -- fp32 -> fp16 conversion, float4 in, two half2 out per thread (grid-stride).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__global__ void to_half_vec4(const float4* __restrict__ in, __half2* __restrict__ out, int64_t n4) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 v = __ldcs(in + i);
        out[2 * i] = __floats2half2_rn(v.x, v.y);
        out[2 * i + 1] = __floats2half2_rn(v.z, v.w);
    }
}

__global__ void to_half_scalar(const float* __restrict__ in, __half* __restrict__ out, int64_t from, int64_t n) {
    const int64_t i = from + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2half_rn(in[i]);
}

}  // namespace

extern "C" void launch_to_half(const float* in, void* out, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 8 == 0;
    const int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        int64_t blocks = (n4 + 255) / 256;
        if (blocks > 132 * 16) blocks = 132 * 16;
        to_half_vec4<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(reinterpret_cast<const float4*>(in),
                                                                         reinterpret_cast<__half2*>(out), n4);
    }
    const int64_t rest = n - 4 * n4;
    if (rest > 0)
        to_half_scalar<<<static_cast<unsigned>((rest + 255) / 256), 256, 0, stream>>>(in, static_cast<__half*>(out),
                                                                                      4 * n4, n);
}
