// slow_softmax.cu -- a correct but deliberately slow row softmax: one thread per row, three passes.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

__global__ void softmax_thread_per_row(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols) {
    const int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (row >= rows) return;
    const float* in = x + row * cols;
    float* out = y + row * cols;
    float m = -INFINITY;
    for (int64_t j = 0; j < cols; ++j) m = fmaxf(m, in[j]);
    float s = 0.f;
    for (int64_t j = 0; j < cols; ++j) s += __expf(in[j] - m);
    const float inv = 1.f / s;
    for (int64_t j = 0; j < cols; ++j) out[j] = __expf(in[j] - m) * inv;
}

}  // namespace

extern "C" void launch_slow_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int kThreads = 64;
    softmax_thread_per_row<<<static_cast<unsigned>((rows + kThreads - 1) / kThreads), kThreads, 0, stream>>>(x, y, rows,
                                                                                                            cols);
}
