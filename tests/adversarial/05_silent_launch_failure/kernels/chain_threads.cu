// chain_threads.cu -- clamp(gelu(x * scale + shift), lo, hi), one element per thread, launched with a
// caller-chosen block size (the binding passes an invalid one on purpose).
#include <cuda_runtime.h>
#include <cstdint>

__global__ void chain_one_per_thread(const float* __restrict__ x, float* __restrict__ y, int64_t n, float scale,
                                     float shift, float lo, float hi) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = fmaf(x[i], scale, shift);
    v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    y[i] = fminf(fmaxf(v, lo), hi);
}

extern "C" void launch_chain_threads(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                     int threads, cudaStream_t stream) {
    if (n <= 0) return;
    const int64_t blocks = (n + threads - 1) / threads;
    chain_one_per_thread<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(x, y, n, scale, shift, lo, hi);
}
