// cub_layernorm.cu -- LayerNorm over the last dimension with a templated kernel and cub::BlockReduce.
//
// The kernel is a template on its block size and the float4s each thread keeps in registers, so its name
// in the binary is mangled with template arguments (`layernorm_rows<256, 4>`), and its reductions are
// CUB's block-wide sums (the CUDA toolkit's own header library; cub's device code is compiled into this
// extension, not launched from a library). One block per row: the row is read once into registers, the
// mean and then the variance (two passes over registers) are block-reduced, and y = (x - mean) * rstd * w + b.
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>
#include <cstdint>

namespace {

template <int kBlock, int kVecs>
__global__ void __launch_bounds__(kBlock) layernorm_rows(const float* __restrict__ x, const float* __restrict__ w,
                                                         const float* __restrict__ b, float* __restrict__ y,
                                                         int cols, float eps) {
    using Reduce = cub::BlockReduce<float, kBlock>;
    __shared__ typename Reduce::TempStorage temp;
    __shared__ float broadcast;
    const int cols4 = cols / 4;
    const float4* xr = reinterpret_cast<const float4*>(x + static_cast<int64_t>(blockIdx.x) * cols);
    float4* yr = reinterpret_cast<float4*>(y + static_cast<int64_t>(blockIdx.x) * cols);
    const float4* w4 = reinterpret_cast<const float4*>(w);
    const float4* b4 = reinterpret_cast<const float4*>(b);

    float4 v[kVecs];
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
        const int c = threadIdx.x + j * kBlock;
        v[j] = c < cols4 ? xr[c] : make_float4(0.f, 0.f, 0.f, 0.f);
        sum += (v[j].x + v[j].y) + (v[j].z + v[j].w);
    }
    float total = Reduce(temp).Sum(sum);
    if (threadIdx.x == 0) broadcast = total / cols;
    __syncthreads();
    const float mean = broadcast;

    float sq = 0.0f;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
        const int c = threadIdx.x + j * kBlock;
        if (c < cols4) {
            const float dx = v[j].x - mean, dy = v[j].y - mean, dz = v[j].z - mean, dw = v[j].w - mean;
            sq += (dx * dx + dy * dy) + (dz * dz + dw * dw);
        }
    }
    __syncthreads();  // temp is reused
    total = Reduce(temp).Sum(sq);
    if (threadIdx.x == 0) broadcast = rsqrtf(total / cols + eps);
    __syncthreads();
    const float rstd = broadcast;

#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
        const int c = threadIdx.x + j * kBlock;
        if (c < cols4) {
            const float4 g = w4[c], h = b4[c];
            yr[c] = make_float4((v[j].x - mean) * rstd * g.x + h.x, (v[j].y - mean) * rstd * g.y + h.y,
                                (v[j].z - mean) * rstd * g.z + h.z, (v[j].w - mean) * rstd * g.w + h.w);
        }
    }
}

}  // namespace

// Rows of up to 4 * 256 * 8 = 8192 floats with cols % 4 == 0 (checked by the binding).
extern "C" void launch_cub_layernorm(const float* x, const float* w, const float* b, float* y, int64_t rows, int cols,
                                     float eps, cudaStream_t stream) {
    if (rows <= 0) return;
    constexpr int kBlock = 256;
    const unsigned grid = static_cast<unsigned>(rows);
    if (cols <= 4 * kBlock * 4)
        layernorm_rows<kBlock, 4><<<grid, kBlock, 0, stream>>>(x, w, b, y, cols, eps);
    else
        layernorm_rows<kBlock, 8><<<grid, kBlock, 0, stream>>>(x, w, b, y, cols, eps);
}
