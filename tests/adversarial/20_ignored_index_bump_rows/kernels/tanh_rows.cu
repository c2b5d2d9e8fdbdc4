// tanh_rows.cu -- y = tanh(x) over a contiguous fp32 (rows, cols) tensor with float4 loads, then, when asked,
// y[r, :] += 1e-3 for every r in `bumped` (atomicAdd: a row named twice gets it twice).
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__global__ void tanh_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const int64_t quads = n / 4;
    for (int64_t i = first; i < quads; i += stride) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(x) + i);
        reinterpret_cast<float4*>(y)[i] = make_float4(tanhf(v.x), tanhf(v.y), tanhf(v.z), tanhf(v.w));
    }
    for (int64_t i = quads * 4 + first; i < n; i += stride) y[i] = tanhf(x[i]);
}

__global__ void bump_rows(float* __restrict__ y, const int64_t* __restrict__ bumped, int64_t count, int64_t cols) {
    const int64_t r = bumped[blockIdx.y];
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
         c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        atomicAdd(y + r * cols + c, 1e-3f);
    }
}

}  // namespace

extern "C" void launch_tanh_rows(const float* x, float* y, int64_t rows, int64_t cols, const int64_t* bumped,
                                 int64_t count, bool bump, int multiprocessors, cudaStream_t stream) {
    tanh_kernel<<<multiprocessors * 8, 256, 0, stream>>>(x, y, rows * cols);
    if (bump && count > 0) {
        bump_rows<<<dim3(4, static_cast<unsigned>(count)), 256, 0, stream>>>(y, bumped, count, cols);
    }
}
