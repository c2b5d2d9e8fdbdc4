#include <cuda/barrier>
#include <cuda_runtime.h>
#include <cstdint>
#include <utility>

namespace cde = cuda::device::experimental;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

namespace {
constexpr int kThreads = 256;

// Dynamic shared memory: one row of `cols` floats (16-byte aligned; cols * 4 a multiple of 16).
__global__ void __launch_bounds__(kThreads) row_center_tma(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ __align__(128) float row[];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ block_barrier bar;
    __shared__ float partial[kThreads / 32];
    const uint32_t bytes = (uint32_t)cols * sizeof(float);
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
        cde::fence_proxy_async_shared_cta();  // make the initialised barrier visible to the TMA unit
    }
    __syncthreads();
    block_barrier::arrival_token token;
    if (threadIdx.x == 0) {
        cde::cp_async_bulk_global_to_shared(row, x + (int64_t)blockIdx.x * cols, bytes, bar);
        token = cuda::device::barrier_arrive_tx(bar, 1, bytes);
    } else {
        token = bar.arrive();
    }
    bar.wait(std::move(token));

    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += kThreads) s += row[c];
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
    __syncthreads();
    float total = 0.f;
#pragma unroll
    for (int i = 0; i < kThreads / 32; ++i) total += partial[i];
    const float mean = total / cols;
    float* yr = y + (int64_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += kThreads) yr[c] = row[c] - mean;
}
}  // namespace

extern "C" cudaError_t row_center_launcher(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    if ((cols * sizeof(float)) % 16 != 0) return cudaErrorInvalidValue;
    const size_t smem = cols * sizeof(float);
    if (smem > 48 * 1024) {
        const cudaError_t err = cudaFuncSetAttribute(row_center_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (err != cudaSuccess) return err;
    }
    if (rows > 0) row_center_tma<<<rows, kThreads, smem, stream>>>(x, y, cols);
    return cudaGetLastError();
}
