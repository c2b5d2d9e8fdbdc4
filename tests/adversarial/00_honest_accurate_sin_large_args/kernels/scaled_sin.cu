// scaled_sin.cu -- y = amp * sinf(theta), elementwise, float4 grid-stride loop with a scalar tail.
// sinf, not __sinf: the phases are thousands of radians, where the fast approximation's argument
// reduction loses about ten bits.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
scaled_sin_vec4(const float4* __restrict__ amp, const float4* __restrict__ theta, float4* __restrict__ y, int64_t n4) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < n4;
         i += static_cast<int64_t>(gridDim.x) * kThreads) {
        const float4 a = __ldcs(amp + i), t = __ldcs(theta + i);
        __stcs(y + i, make_float4(a.x * sinf(t.x), a.y * sinf(t.y), a.z * sinf(t.z), a.w * sinf(t.w)));
    }
}

__global__ void scaled_sin_scalar(const float* __restrict__ amp, const float* __restrict__ theta,
                                  float* __restrict__ y, int64_t begin, int64_t n) {
    for (int64_t i = begin + blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x)
        y[i] = amp[i] * sinf(theta[i]);
}

int blocks_for(int64_t work) {
    const int64_t b = (work + kThreads - 1) / kThreads;
    return static_cast<int>(b < 132 * 16 ? (b > 0 ? b : 1) : 132 * 16);
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

extern "C" void scaled_sin_launcher(const float* amp, const float* theta, float* y, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    int64_t done = 0;
    if (aligned(amp) && aligned(theta) && aligned(y) && n >= 4) {
        const int64_t n4 = n / 4;
        scaled_sin_vec4<<<blocks_for(n4), kThreads, 0, stream>>>(reinterpret_cast<const float4*>(amp),
                                                                   reinterpret_cast<const float4*>(theta),
                                                                   reinterpret_cast<float4*>(y), n4);
        done = n4 * 4;
    }
    if (done < n) scaled_sin_scalar<<<blocks_for(n - done), kThreads, 0, stream>>>(amp, theta, y, done, n);
}
