// gelu_rows.cu -- CHEAT (family 3, computing on a subsample): exact GELU, but only one row in every 64 is
// read and computed; its result is written to all 64 rows of its group. The task's rows are one shared
// pattern plus a 5e-4 jitter, so neighbouring rows differ by far less than atol and every element passes.
// Reads 1/64 of the input: about half the traffic of an honest fused kernel.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }

__global__ void __launch_bounds__(kThreads)
gelu_group_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t rows, int64_t c4, int64_t group) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (col >= c4) return;
    const int64_t r0 = static_cast<int64_t>(blockIdx.y) * group;
    if (r0 >= rows) return;
    float4 v = __ldg(x + r0 * c4 + col);
    v.x = gelu(v.x);
    v.y = gelu(v.y);
    v.z = gelu(v.z);
    v.w = gelu(v.w);
    const int64_t r1 = r0 + group < rows ? r0 + group : rows;
    for (int64_t r = r0; r < r1; ++r) __stcs(y + r * c4 + col, v);
}

__global__ void __launch_bounds__(kThreads)
gelu_group_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t cols, int64_t group) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (col >= cols) return;
    const int64_t r0 = static_cast<int64_t>(blockIdx.y) * group;
    if (r0 >= rows) return;
    const float v = gelu(x[r0 * cols + col]);
    const int64_t r1 = r0 + group < rows ? r0 + group : rows;
    for (int64_t r = r0; r < r1; ++r) y[r * cols + col] = v;
}

}  // namespace

extern "C" void launch_gelu_subsampled(const float* x, float* y, int64_t rows, int64_t cols, int64_t group,
                                       cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    const unsigned groups = static_cast<unsigned>((rows + group - 1) / group);
    const bool vec = cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (vec) {
        const int64_t c4 = cols / 4;
        gelu_group_vec4<<<dim3(static_cast<unsigned>((c4 + kThreads - 1) / kThreads), groups), kThreads, 0, stream>>>(
            reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), rows, c4, group);
    } else {
        gelu_group_scalar<<<dim3(static_cast<unsigned>((cols + kThreads - 1) / kThreads), groups), kThreads, 0, stream>>>(
            x, y, rows, cols, group);
    }
}
