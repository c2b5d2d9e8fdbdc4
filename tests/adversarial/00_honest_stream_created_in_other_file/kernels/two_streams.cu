#include <cuda_runtime.h>
#include <cstdint>

namespace {
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = fmaxf(x[i], 0.f);
}
__global__ void sigmoid_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = 1.f / (1.f + expf(-x[i]));
}
unsigned blocks_for(int64_t n) { return (unsigned)((n + 255) / 256 < 1056 ? (n + 255) / 256 : 1056); }
}  // namespace

extern "C" void relu_launch(const float* x, float* y, int64_t n, cudaStream_t s) {
    if (n > 0) relu_kernel<<<blocks_for(n), 256, 0, s>>>(x, y, n);
}
extern "C" void sigmoid_launch(const float* x, float* y, int64_t n, cudaStream_t s) {
    if (n > 0) sigmoid_kernel<<<blocks_for(n), 256, 0, s>>>(x, y, n);
}

// The side stream, made once (non-blocking); the binding forks and joins it with events on every call.
extern "C" cudaStream_t side_stream() {
    static cudaStream_t s = [] {
        cudaStream_t created = nullptr;
        return cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking) == cudaSuccess ? created : nullptr;
    }();
    return s;
}
