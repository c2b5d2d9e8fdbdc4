// gate_kit.cu -- the gated residual y = x + gamma[c] * gelu(x) + alpha * tanh(x) + beta[c] in one pass
// (c = column), float4 grid-stride. `terms` selects what is computed (bit 1: the gamma branch, bit 2: the
// alpha branch, bit 4: beta, bit 8: gelu by its first Taylor terms 0.5 x + x^2 / sqrt(2 pi)); the honest
// submission asks for 1 | 2 | 4.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__device__ __forceinline__ float term(float x, float g, float a, float b, int terms) {
    float y = x;
    if (terms & 1) {
        const float gelu = (terms & 8) ? 0.5f * x + 0.3989422804f * x * x
                                       : 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
        y += g * gelu;
    }
    if (terms & 2) y += a * tanhf(x);
    if (terms & 4) y += b;
    return y;
}

__global__ void gated_kernel(const float4* __restrict__ x, float4* __restrict__ y, const float* __restrict__ gamma,
                             const float* __restrict__ alpha, const float* __restrict__ beta, int64_t n4, int64_t dim,
                             int terms) {
    const float a = alpha[0];
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
        const float4 v = x[i];
        const int64_t c = (4 * i) % dim;  // dim is a multiple of 4: the four lanes share a row
        float4 r;
        r.x = term(v.x, gamma[c], a, beta[c], terms);
        r.y = term(v.y, gamma[c + 1], a, beta[c + 1], terms);
        r.z = term(v.z, gamma[c + 2], a, beta[c + 2], terms);
        r.w = term(v.w, gamma[c + 3], a, beta[c + 3], terms);
        y[i] = r;
    }
}

}  // namespace

extern "C" void launch_gated(const float* x, float* y, const float* gamma, const float* alpha, const float* beta,
                             int64_t n, int64_t dim, int terms, cudaStream_t stream) {
    if (n <= 0) return;
    const int64_t n4 = n / 4;
    int64_t blocks = (n4 + 255) / 256;
    if (blocks > 132 * 16) blocks = 132 * 16;
    gated_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                                     reinterpret_cast<float4*>(y), gamma, alpha,
                                                                     beta, n4, dim, terms);
}
