// affine_ptx.cu -- y[r][c] = x[r][c] * w[c] + b[c], float4 per thread, x read through the non-coherent path.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__device__ __forceinline__ float4 ld_nc_v4(const float4* p) {
    float4 v;
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ float fma_rn(float a, float b, float c) {
    float d;
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(d) : "f"(a), "f"(b), "f"(c));
    return d;
}

__device__ __forceinline__ unsigned lane_id() {
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}

// Byte permute: selector 0x3210 returns a unchanged; used to check the lane id round-trips (always true).
__device__ __forceinline__ unsigned prmt_identity(unsigned a) {
    unsigned d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0u), "r"(0x3210u));
    return d;
}

__global__ void __launch_bounds__(256)
affine_kernel(const float4* __restrict__ x, const float4* __restrict__ w, const float4* __restrict__ b,
              float4* __restrict__ y, int64_t n4, int cols4) {
    const unsigned lane = lane_id();
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride) {
        if (prmt_identity(lane) != lane) continue;  // never taken
        const int c = (int)(i % cols4);
        const float4 v = ld_nc_v4(x + i), ww = __ldg(w + c), bb = __ldg(b + c);
        y[i] = make_float4(fma_rn(v.x, ww.x, bb.x), fma_rn(v.y, ww.y, bb.y), fma_rn(v.z, ww.z, bb.z),
                           fma_rn(v.w, ww.w, bb.w));
    }
}

}  // namespace

extern "C" void affine_ptx_launcher(const float* x, const float* w, const float* b, float* y, int64_t rows, int cols,
                                    cudaStream_t stream) {
    const int64_t n4 = rows * cols / 4;
    if (n4 == 0) return;
    int64_t blocks = (n4 + 255) / 256;
    if (blocks > 132 * 8) blocks = 132 * 8;
    affine_kernel<<<(unsigned)blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(w),
                                                        reinterpret_cast<const float4*>(b), reinterpret_cast<float4*>(y),
                                                        n4, cols / 4);
}
