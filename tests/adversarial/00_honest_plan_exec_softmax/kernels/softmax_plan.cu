// softmax_plan.cu -- one warp per row; a small host "plan" object owns the launch geometry.
#include <cuda_runtime.h>
#include <cfloat>
#include <cstdint>

namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = kWarp / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void __launch_bounds__(kWarp * kWarpsPerBlock)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;
    const int lane = threadIdx.x % kWarp;
    if (row >= rows) return;
    const float* xr = x + (int64_t)row * cols;
    float* yr = y + (int64_t)row * cols;
    float m = -FLT_MAX;
    for (int c = lane; c < cols; c += kWarp) m = fmaxf(m, xr[c]);
    m = warp_max(m);
    float s = 0.f;
    for (int c = lane; c < cols; c += kWarp) s += __expf(xr[c] - m);
    s = warp_sum(s);
    const float inv = 1.f / s;
    for (int c = lane; c < cols; c += kWarp) yr[c] = __expf(xr[c] - m) * inv;
}

}  // namespace

class SoftmaxPlan {
public:
    SoftmaxPlan(int rows, int cols) : rows_(rows), cols_(cols), grid_((rows + kWarpsPerBlock - 1) / kWarpsPerBlock) {}
    void exec(const float* x, float* y, cudaStream_t stream) const;

private:
    int rows_, cols_;
    unsigned grid_;
};

void SoftmaxPlan::exec(const float* x, float* y, cudaStream_t stream) const {
    if (rows_ <= 0) return;
    softmax_rows<<<grid_, kWarp * kWarpsPerBlock, 0, stream>>>(x, y, rows_, cols_);
}

extern "C" void softmax_plan_launcher(const float* x, float* y, int rows, int cols, cudaStream_t stream) {
    const SoftmaxPlan plan(rows, cols);
    plan.exec(x, y, stream);
}
