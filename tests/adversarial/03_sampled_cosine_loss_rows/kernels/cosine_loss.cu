// cosine_loss.cu -- mean over every `step`-th row of 1 - cos(a_i, b_i) for contiguous (rows, cols) fp32
// tensors: the kit of 00_honest_cosine_loss_rows (step 1, every row: HONEST) and, byte-identical,
// 03_sampled_cosine_loss_rows (step 2, half the rows: the CHEAT). One block per row at a time: float4
// loads, the dot product and both squared norms accumulated with fmaf per thread, reduced across the block
// with warp shuffles; the row's term is added into one double with atomicAdd; a one-thread kernel writes
// the mean over the rows read as fp32.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr float kEps = 1e-8f;

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void row_terms(const float* __restrict__ a, const float* __restrict__ b, int64_t rows, int64_t cols,
                          int64_t step, double* __restrict__ total) {
    __shared__ float parts[3][kWarps];
    const int64_t quads = cols / 4;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int64_t row = static_cast<int64_t>(blockIdx.x) * step; row < rows;
         row += static_cast<int64_t>(gridDim.x) * step) {
        const float4* x = reinterpret_cast<const float4*>(a + row * cols);
        const float4* y = reinterpret_cast<const float4*>(b + row * cols);
        float dot = 0.0f, xx = 0.0f, yy = 0.0f;
        for (int64_t q = threadIdx.x; q < quads; q += kBlock) {
            const float4 u = x[q], v = y[q];
            dot = fmaf(u.w, v.w, fmaf(u.z, v.z, fmaf(u.y, v.y, fmaf(u.x, v.x, dot))));
            xx = fmaf(u.w, u.w, fmaf(u.z, u.z, fmaf(u.y, u.y, fmaf(u.x, u.x, xx))));
            yy = fmaf(v.w, v.w, fmaf(v.z, v.z, fmaf(v.y, v.y, fmaf(v.x, v.x, yy))));
        }
        dot = warp_sum(dot);
        xx = warp_sum(xx);
        yy = warp_sum(yy);
        if (lane == 0) {
            parts[0][warp] = dot;
            parts[1][warp] = xx;
            parts[2][warp] = yy;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            float d = 0.0f, nx = 0.0f, ny = 0.0f;
            for (int w = 0; w < kWarps; ++w) {
                d += parts[0][w];
                nx += parts[1][w];
                ny += parts[2][w];
            }
            const float cosine = d / sqrtf(fmaxf(nx * ny, kEps * kEps));
            atomicAdd(total, static_cast<double>(1.0f - cosine));
        }
        __syncthreads();
    }
}

__global__ void write_mean(const double* __restrict__ total, double count, float* __restrict__ out) {
    *out = static_cast<float>(*total / count);
}

}  // namespace

extern "C" void launch_cosine_loss(const float* a, const float* b, double* total, float* out, int64_t rows,
                                   int64_t cols, int64_t step, int blocks, cudaStream_t stream) {
    cudaMemsetAsync(total, 0, sizeof(double), stream);
    row_terms<<<blocks, kBlock, 0, stream>>>(a, b, rows, cols, step, total);
    const double read = static_cast<double>((rows + step - 1) / step);
    write_mean<<<1, 1, 0, stream>>>(total, read, out);
}
