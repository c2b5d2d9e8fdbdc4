#include <cuda_runtime.h>
#include <cfloat>
#include <cstdint>

namespace {
// In-place softmax of each row of a (rows, cols) fp32 matrix, one warp per row.
__global__ void __launch_bounds__(256) softmax_inplace(float* __restrict__ s, int64_t rows, int cols) {
    const int64_t row = blockIdx.x * 8LL + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float* r = s + row * cols;
    float m = -FLT_MAX;
    for (int c = lane; c < cols; c += 32) m = fmaxf(m, r[c]);
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    float sum = 0.f;
    for (int c = lane; c < cols; c += 32) sum += expf(r[c] - m);
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float inv = 1.f / sum;
    for (int c = lane; c < cols; c += 32) r[c] = expf(r[c] - m) * inv;
}
}  // namespace

extern "C" void softmax_inplace_launcher(float* s, int64_t rows, int cols, cudaStream_t stream) {
    if (rows > 0) softmax_inplace<<<(unsigned)((rows + 7) / 8), 256, 0, stream>>>(s, rows, cols);
}
