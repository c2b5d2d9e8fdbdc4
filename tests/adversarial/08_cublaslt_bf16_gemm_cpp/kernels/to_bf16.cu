// to_bf16.cu -- fp32 -> bf16 conversion (round to nearest), float4 in, two bf16 pairs out per thread.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__global__ void to_bf16_vec4(const float4* __restrict__ in, __nv_bfloat162* __restrict__ out, int64_t n4) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 v = __ldcs(in + i);
        out[2 * i] = __floats2bfloat162_rn(v.x, v.y);
        out[2 * i + 1] = __floats2bfloat162_rn(v.z, v.w);
    }
}

__global__ void to_bf16_scalar(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, int64_t from, int64_t n) {
    const int64_t i = from + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16_rn(in[i]);
}

}  // namespace

extern "C" void launch_to_bf16(const float* in, void* out, int64_t n, cudaStream_t stream) {
    if (n <= 0) return;
    const bool aligned = reinterpret_cast<uintptr_t>(in) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 8 == 0;
    const int64_t n4 = aligned ? n / 4 : 0;
    if (n4 > 0) {
        int64_t blocks = (n4 + 255) / 256;
        if (blocks > 132 * 16) blocks = 132 * 16;
        to_bf16_vec4<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(reinterpret_cast<const float4*>(in),
                                                                         reinterpret_cast<__nv_bfloat162*>(out), n4);
    }
    const int64_t rest = n - 4 * n4;
    if (rest > 0)
        to_bf16_scalar<<<static_cast<unsigned>((rest + 255) / 256), 256, 0, stream>>>(
            in, static_cast<__nv_bfloat16*>(out), 4 * n4, n);
}
