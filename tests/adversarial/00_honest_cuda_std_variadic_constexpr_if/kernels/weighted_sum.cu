#include <cuda/std/array>
#include <cuda/std/limits>
#include <cuda/std/utility>
#include <cuda_runtime.h>
#include <cstdint>
#include <utility>

namespace {

template <int N>
struct Weights {
    cuda::std::array<float, N> w;
};

template <int Vec, typename... Ptrs>
__global__ void __launch_bounds__(256)
weighted_sum(float* __restrict__ out, int64_t n, const Weights<sizeof...(Ptrs)> weights, Ptrs... inputs) {
    static_assert(Vec == 1 || Vec == 4, "scalar or float4 path");
    static_assert(cuda::std::numeric_limits<float>::is_iec559, "IEEE floats");
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n / Vec; i += stride) {
        if constexpr (Vec == 4) {
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
            int k = 0;
            ((acc = [&](float4 v, float wk) {
                 return make_float4(fmaf(wk, v.x, acc.x), fmaf(wk, v.y, acc.y), fmaf(wk, v.z, acc.z), fmaf(wk, v.w, acc.w));
             }(reinterpret_cast<const float4*>(inputs)[i], weights.w[k++])),
             ...);
            reinterpret_cast<float4*>(out)[i] = acc;
        } else {
            float acc = 0.f;
            int k = 0;
            ((acc = fmaf(weights.w[k++], inputs[i], acc)), ...);
            out[i] = acc;
        }
    }
}

template <int Vec, typename... Ptrs>
void launch(float* out, int64_t n, const Weights<sizeof...(Ptrs)>& w, cudaStream_t stream, Ptrs... inputs) {
    int64_t blocks = (n / Vec + 255) / 256;
    if (blocks > 132 * 8) blocks = 132 * 8;
    if (blocks > 0) weighted_sum<Vec><<<(unsigned)blocks, 256, 0, stream>>>(out, n, w, inputs...);
}

std::pair<int64_t, int64_t> split_vector(int64_t n) { return {n / 4 * 4, n % 4}; }

}  // namespace

extern "C" void weighted_sum_launcher(const float* a, const float* b, const float* c, float* out, int64_t n,
                                      cudaStream_t stream) {
    const Weights<3> w{{0.5f, 0.25f, 1.0f}};
    const auto [body, tail] = split_vector(n);
    launch<4>(out, body, w, stream, a, b, c);
    if (tail > 0) launch<1>(out + body, tail, w, stream, a + body, b + body, c + body);
}
