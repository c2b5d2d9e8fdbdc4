// cub_rowsum.cu -- row sums of a row-major (rows, cols) float matrix with cub::DeviceSegmentedReduce::Sum.
//
// Each row is one segment. Segment i begins at i * cols and ends at (i + 1) * cols; instead of storing
// rows + 1 offsets, a counting iterator mapped through `i * cols` produces them on the fly (begin: the
// iterator at 0, end: the same iterator advanced by one). CUB's two-phase protocol: a null temporary buffer
// asks for the bytes needed, the caller allocates them through torch and calls again, on its stream.
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

struct RowStart {
    int64_t cols;
    __host__ __device__ int64_t operator()(int64_t row) const { return row * cols; }
};

cudaError_t rowsum(void* temp, size_t& temp_bytes, const float* x, float* y, int64_t rows, int64_t cols,
                   cudaStream_t stream) {
    auto starts = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0), RowStart{cols});
    return cub::DeviceSegmentedReduce::Sum(temp, temp_bytes, x, y, rows, starts, starts + 1, stream);
}

}  // namespace

extern "C" cudaError_t cub_rowsum_temp_bytes(int64_t rows, int64_t cols, size_t* bytes, cudaStream_t stream) {
    *bytes = 0;
    return rowsum(nullptr, *bytes, nullptr, nullptr, rows, cols, stream);
}

extern "C" cudaError_t cub_rowsum(void* temp, size_t temp_bytes, const float* x, float* y, int64_t rows,
                                  int64_t cols, cudaStream_t stream) {
    return rowsum(temp, temp_bytes, x, y, rows, cols, stream);
}
