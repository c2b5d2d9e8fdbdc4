// cub_minmax.cu -- min and max of a float array in one device-wide pass: cub::DeviceReduce::TransformReduce.
//
// Every element is transformed into the pair (x, x) (a float2: .x tracks the minimum, .y the maximum) and
// pairs are combined by (min, max). The reduction's initial value is (+inf, -inf), the identity of the pair
// operation. CUB's two-phase protocol: a call with a null temporary buffer reports the bytes needed, the
// caller allocates them (torch's allocator, in the binding) and calls again. Both on the caller's stream.
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace {

struct ToPair {
    __host__ __device__ float2 operator()(float v) const { return make_float2(v, v); }
};

struct MinMax {
    __host__ __device__ float2 operator()(const float2& a, const float2& b) const {
        return make_float2(fminf(a.x, b.x), fmaxf(a.y, b.y));
    }
};

cudaError_t minmax(void* temp, size_t& temp_bytes, const float* x, float2* out, int64_t n, cudaStream_t stream) {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    const float2 init = make_float2(kInf, -kInf);
    return cub::DeviceReduce::TransformReduce(temp, temp_bytes, x, out, n, MinMax{}, ToPair{}, init, stream);
}

}  // namespace

extern "C" cudaError_t cub_minmax_temp_bytes(int64_t n, size_t* bytes, cudaStream_t stream) {
    *bytes = 0;
    return minmax(nullptr, *bytes, nullptr, nullptr, n, stream);
}

// out: two floats, [min, max] (8-byte aligned: the start of a torch allocation).
extern "C" cudaError_t cub_minmax(void* temp, size_t temp_bytes, const float* x, float* out, int64_t n,
                                  cudaStream_t stream) {
    return minmax(temp, temp_bytes, x, reinterpret_cast<float2*>(out), n, stream);
}
