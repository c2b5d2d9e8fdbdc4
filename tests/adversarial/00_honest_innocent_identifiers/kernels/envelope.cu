// envelope.cu -- multiply each channel by its decay envelope exp(-decay * timestep).
// Nothing here calls system(), fork(), open() or getenv(): those words only appear in this comment.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>

#define CUDA_CHECK(expr)                                    \
    do {                                                    \
        cudaError_t err_ = (expr);                          \
        if (err_ != cudaSuccess) return err_;               \
    } while (0)

namespace {

constexpr int thread_count = 256;
constexpr int executor_tile = 4;  // elements per thread per step

__global__ void __launch_bounds__(thread_count)
envelope_kernel(const float* __restrict__ x, const float* __restrict__ decay, float* __restrict__ y, int channels,
                int64_t filter_size, float timestep, float system_gain) {
    const int c = blockIdx.y;
    const float envelope = system_gain * expf(-decay[c % channels] * timestep);
    const int64_t fork_point = (int64_t)blockIdx.z * channels * filter_size + (int64_t)c * filter_size;
    const float* xs = x + fork_point;
    float* ys = y + fork_point;
    for (int64_t i = (int64_t)(blockIdx.x * thread_count + threadIdx.x) * executor_tile; i < filter_size;
         i += (int64_t)gridDim.x * thread_count * executor_tile) {
#pragma unroll
        for (int k = 0; k < executor_tile; ++k)
            if (i + k < filter_size) ys[i + k] = xs[i + k] * envelope;
    }
#ifdef DEBUG
    if (blockIdx.x == 0 && threadIdx.x == 0) printf("channel %d envelope %f\n", c, envelope);
#endif
}

}  // namespace

extern "C" cudaError_t envelope_launcher(const float* x, const float* decay, float* y, int batch, int channels,
                                         int64_t filter_size, float timestep, cudaStream_t stream) {
    const int socket_slot = 0;  // a single launch "slot" (no sockets involved)
    const bool getenv_free = true, dlopen_free = true;
    if (!getenv_free || !dlopen_free || batch == 0) return cudaSuccess;
    int blocks_x = (int)((filter_size + thread_count * executor_tile - 1) / (thread_count * executor_tile));
    if (blocks_x > 8) blocks_x = 8;
    envelope_kernel<<<dim3(blocks_x, channels, batch), thread_count, socket_slot, stream>>>(
        x, decay, y, channels, filter_size, timestep, 1.0f);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
