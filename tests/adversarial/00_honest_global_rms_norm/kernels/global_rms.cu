// global_rms.cu -- HONEST: y = x / sqrt(mean(x^2)) for a contiguous fp32 tensor whose size is a multiple of 4.
// Pass 1 reads every element (float4 grid-stride loop, fmaf per thread, cub::BlockReduce per block); one block
// sums the partials in double and rounds the root mean square to fp32 once; pass 2 divides every element
// by it with a correctly rounded division (fast math would make `/` approximate).
#include <cub/block/block_reduce.cuh>
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void square_sums(const float4* __restrict__ x, int64_t quads, float* __restrict__ partials) {
    using Reduce = cub::BlockReduce<float, kThreads>;
    __shared__ typename Reduce::TempStorage storage;
    float sum = 0.0f;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < quads; i += stride) {
        const float4 v = __ldg(x + i);
        sum = fmaf(v.x, v.x, sum);
        sum = fmaf(v.y, v.y, sum);
        sum = fmaf(v.z, v.z, sum);
        sum = fmaf(v.w, v.w, sum);
    }
    const float block = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = block;
}

__global__ void root_mean_square(const float* __restrict__ partials, int blocks, double count, float* __restrict__ rms) {
    using Reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename Reduce::TempStorage storage;
    double sum = 0.0;
    for (int i = threadIdx.x; i < blocks; i += kThreads) sum += static_cast<double>(partials[i]);
    const double total = Reduce(storage).Sum(sum);
    if (threadIdx.x == 0) rms[0] = static_cast<float>(sqrt(total / count));
}

__global__ void divide_by(const float4* __restrict__ x, const float* __restrict__ rms, float4* __restrict__ y,
                          int64_t quads) {
    const float r = rms[0];
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < quads; i += stride) {
        const float4 v = __ldg(x + i);
        y[i] = make_float4(__fdiv_rn(v.x, r), __fdiv_rn(v.y, r), __fdiv_rn(v.z, r), __fdiv_rn(v.w, r));
    }
}

}  // namespace

extern "C" void launch_global_rms_norm(const float* x, float* partials, int blocks, float* rms, float* y,
                                       int64_t elements, cudaStream_t stream) {
    const int64_t quads = elements / 4;
    square_sums<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const float4*>(x), quads, partials);
    root_mean_square<<<1, kThreads, 0, stream>>>(partials, blocks, static_cast<double>(elements), rms);
    divide_by<<<blocks, kThreads, 0, stream>>>(reinterpret_cast<const float4*>(x), rms, reinterpret_cast<float4*>(y),
                                               quads);
}
