// dual.cu -- elementwise kernels with one or two outputs: relu and sigmoid of x in one pass, or sigmoid alone.
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + __expf(-v)); }

// Grid-stride; float4 when every pointer is 16-byte aligned, else element by element. `relu` may be null.
__global__ void __launch_bounds__(kThreads) relu_sigmoid_kernel(const float* __restrict__ x, float* __restrict__ relu,
                                                                float* __restrict__ sig, int64_t n, bool vec) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (vec) {
        const int64_t n4 = n / 4;
        for (int64_t i = first; i < n4; i += stride) {
            const float4 v = reinterpret_cast<const float4*>(x)[i];
            if (relu)
                reinterpret_cast<float4*>(relu)[i] =
                    make_float4(fmaxf(v.x, 0.f), fmaxf(v.y, 0.f), fmaxf(v.z, 0.f), fmaxf(v.w, 0.f));
            reinterpret_cast<float4*>(sig)[i] = make_float4(sigmoid(v.x), sigmoid(v.y), sigmoid(v.z), sigmoid(v.w));
        }
        for (int64_t i = 4 * n4 + first; i < n; i += stride) {
            if (relu) relu[i] = fmaxf(x[i], 0.f);
            sig[i] = sigmoid(x[i]);
        }
        return;
    }
    for (int64_t i = first; i < n; i += stride) {
        if (relu) relu[i] = fmaxf(x[i], 0.f);
        sig[i] = sigmoid(x[i]);
    }
}

}  // namespace

extern "C" void launch_relu_sigmoid(const float* x, float* relu, float* sig, int64_t n, int sms, cudaStream_t stream) {
    if (n <= 0) return;
    const bool vec = reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(sig) % 16 == 0 &&
                     (relu == nullptr || reinterpret_cast<uintptr_t>(relu) % 16 == 0);
    int64_t blocks = ((vec ? n / 4 : n) + kThreads - 1) / kThreads;
    const int64_t cap = static_cast<int64_t>(sms > 0 ? sms : 132) * 8;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    relu_sigmoid_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, relu, sig, n, vec);
}
