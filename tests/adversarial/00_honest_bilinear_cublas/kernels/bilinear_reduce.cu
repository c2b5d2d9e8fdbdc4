#include <cuda_runtime.h>
#include <cstdint>

namespace {
// t: (out, B, in2) = x1 W[o]; y[b][o] = sum_j t[o][b][j] * x2[b][j] + bias[o]. One warp per (b, o).
__global__ void __launch_bounds__(256)
bilinear_reduce(const float* __restrict__ t, const float* __restrict__ x2, const float* __restrict__ bias,
                float* __restrict__ y, int B, int out, int in2) {
    const int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (w >= (int64_t)B * out) return;
    const int b = (int)(w / out), o = (int)(w % out);
    const float* tr = t + ((int64_t)o * B + b) * in2;
    const float* xr = x2 + (int64_t)b * in2;
    float s = 0.f;
    for (int j = lane; j < in2; j += 32) s = fmaf(tr[j], xr[j], s);
    for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) y[(int64_t)b * out + o] = s + bias[o];
}
}  // namespace

extern "C" void bilinear_reduce_launcher(const float* t, const float* x2, const float* bias, float* y, int B, int out, int in2,
                                         cudaStream_t stream) {
    const int64_t threads = (int64_t)B * out * 32;
    if (threads > 0) bilinear_reduce<<<(unsigned)((threads + 255) / 256), 256, 0, stream>>>(t, x2, bias, y, B, out, in2);
}
