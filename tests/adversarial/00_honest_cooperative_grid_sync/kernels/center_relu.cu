// center_relu.cu -- y = relu(x - mean(x)) over all n elements, in one cooperative launch:
//   phase 1: each block sums its grid-stride share of x (float per thread, double across the block) into
//            partial[block];
//   grid.sync();
//   phase 2: every block sums all partials in the same order (so every block gets the same mean) and
//            writes relu(x - mean) over its share again.
// The grid is exactly as many blocks as can be resident at once (a cooperative launch requires it).
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <cstdint>

namespace cg = cooperative_groups;

namespace {

constexpr int kThreads = 256;

__device__ double block_sum(double v) {
    __shared__ double warp_sums[kThreads / 32];
    __shared__ double total;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        double w = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0;
        for (int o = 16; o > 0; o >>= 1) w += __shfl_xor_sync(0xffffffffu, w, o);
        if (threadIdx.x == 0) total = w;
    }
    __syncthreads();
    return total;
}

__global__ void __launch_bounds__(kThreads)
center_relu_kernel(const float* __restrict__ x, float* __restrict__ y, double* __restrict__ partial, int64_t n) {
    cg::grid_group grid = cg::this_grid();
    const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    float local = 0.f;
    for (int64_t i = first; i < n; i += stride) local += x[i];
    const double block_total = block_sum(static_cast<double>(local));
    if (threadIdx.x == 0) partial[blockIdx.x] = block_total;
    grid.sync();
    double s = 0.0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += kThreads) s += partial[b];
    const float mean = static_cast<float>(block_sum(s) / static_cast<double>(n));
    for (int64_t i = first; i < n; i += stride) y[i] = fmaxf(x[i] - mean, 0.f);
}

}  // namespace

// Blocks of the cooperative grid: all that fit at once on the device (0 if the launch is impossible).
extern "C" int center_relu_blocks(int device) {
    int per_sm = 0, sms = 0, cooperative = 0;
    if (cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device) != cudaSuccess || !cooperative)
        return 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, center_relu_kernel, kThreads, 0) != cudaSuccess)
        return 0;
    return per_sm * sms;
}

extern "C" int center_relu_launcher(const float* x, float* y, double* partial, int64_t n, int blocks,
                                    cudaStream_t stream) {
    void* args[] = {&x, &y, &partial, &n};
    return static_cast<int>(
        cudaLaunchCooperativeKernel(reinterpret_cast<void*>(center_relu_kernel), dim3(blocks), dim3(kThreads), args, 0,
                                    stream));
}
