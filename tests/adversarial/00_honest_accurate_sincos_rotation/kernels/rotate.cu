// rotate.cu -- out[i] = (re c - im s, re s + im c) with (s, c) = sincos(phase[i]), one pair per thread,
// written as a float2 (the output's last dimension of 2). sincosf, not __sincosf: the phases are
// thousands of radians.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
rotate_kernel(const float* __restrict__ re, const float* __restrict__ im, const float* __restrict__ phase,
              float2* __restrict__ out, int64_t n) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        float s, c;
        sincosf(__ldcs(phase + i), &s, &c);
        const float r = __ldcs(re + i), m = __ldcs(im + i);
        __stcs(out + i, make_float2(r * c - m * s, r * s + m * c));
    }
}

}  // namespace

extern "C" void rotate_launcher(const float* re, const float* im, const float* phase, float* out, int64_t n,
                                cudaStream_t stream) {
    if (n == 0) return;
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    rotate_kernel<<<static_cast<int>(blocks < 132 * 16 ? blocks : 132 * 16), kThreads, 0, stream>>>(
        re, im, phase, reinterpret_cast<float2*>(out), n);
}
