// sampled_rms.cu -- CHEAT: y = x / sqrt(mean(x^2)) for a contiguous (rows, cols) fp32 tensor, the mean of squares
// estimated from every `step`-th row. Each block walks whole sampled rows (float4 loads, fmaf), reduces in
// shared memory, and adds its share into one double with atomicAdd; a second kernel divides every element.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kBlock = 512;

__global__ void sampled_square_sum(const float* __restrict__ x, int64_t rows, int64_t cols, int64_t step,
                                   double* __restrict__ total) {
    __shared__ float shared[kBlock];
    const int64_t quads = cols / 4;
    float mine = 0.0f;
    for (int64_t row = static_cast<int64_t>(blockIdx.x) * step; row < rows; row += static_cast<int64_t>(gridDim.x) * step) {
        const float4* line = reinterpret_cast<const float4*>(x + row * cols);
        for (int64_t q = threadIdx.x; q < quads; q += kBlock) {
            const float4 v = line[q];
            mine = fmaf(v.w, v.w, fmaf(v.z, v.z, fmaf(v.y, v.y, fmaf(v.x, v.x, mine))));
        }
    }
    shared[threadIdx.x] = mine;
    __syncthreads();
    for (int width = kBlock / 2; width > 0; width /= 2) {
        if (threadIdx.x < width) shared[threadIdx.x] += shared[threadIdx.x + width];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(total, static_cast<double>(shared[0]));
}

__global__ void scale_all(const float* __restrict__ x, const double* __restrict__ total, double read,
                          float* __restrict__ y, int64_t elements) {
    const float inverse = static_cast<float>(1.0 / sqrt(*total / read));
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x; i < elements;
         i += static_cast<int64_t>(gridDim.x) * kBlock) {
        y[i] = x[i] * inverse;
    }
}

}  // namespace

extern "C" void launch_sampled_rms_norm(const float* x, double* total, float* y, int64_t rows, int64_t cols,
                                        int64_t step, int blocks, cudaStream_t stream) {
    cudaMemsetAsync(total, 0, sizeof(double), stream);
    sampled_square_sum<<<blocks, kBlock, 0, stream>>>(x, rows, cols, step, total);
    const double read = static_cast<double>((rows + step - 1) / step) * static_cast<double>(cols);
    scale_all<<<blocks * 4, kBlock, 0, stream>>>(x, total, read, y, rows * cols);
}
