// cub_sort.cu -- stable ascending sort of float keys with their original positions:
// cub::DeviceRadixSort::SortPairs over (key, index) pairs, the indices written first by iota_kernel.
//
// CUB's radix sort maps floats to order-preserving unsigned keys (sign bit flipped for positives, all bits
// for negatives) and sorts them least significant digit first, each pass stable, so pairs with equal keys
// keep their input order: the same answer as torch.sort(stable=True). CUB's two-phase protocol: a null
// temporary buffer asks for the bytes, the caller allocates them through torch and calls again.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

__global__ void iota_kernel(int64_t* __restrict__ out, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) out[i] = i;
}

}  // namespace

extern "C" cudaError_t cub_sort_pairs_temp_bytes(int64_t n, size_t* bytes, cudaStream_t stream) {
    *bytes = 0;
    return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, static_cast<const float*>(nullptr),
                                           static_cast<float*>(nullptr), static_cast<const int64_t*>(nullptr),
                                           static_cast<int64_t*>(nullptr), n, 0, static_cast<int>(sizeof(float) * 8),
                                           stream);
}

// keys_out and idx_out receive the sorted keys and their original positions; idx_in is scratch for the
// identity permutation (n int64s).
extern "C" cudaError_t cub_sort_pairs(void* temp, size_t temp_bytes, const float* keys_in, float* keys_out,
                                      int64_t* idx_in, int64_t* idx_out, int64_t n, cudaStream_t stream) {
    constexpr int kThreads = 256;
    const int64_t blocks = (n + kThreads - 1) / kThreads;
    iota_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream>>>(idx_in, n);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, idx_in, idx_out, n, 0,
                                           static_cast<int>(sizeof(float) * 8), stream);
}
