// morphology.cu -- y = dilate(erode(x)) with a 3-wide window; max_pool1d's padding ignores the outside, so
// erode/dilate take min/max over the in-row neighbours only.
#include <cuda_runtime.h>
#include <cstdint>
#include <math.h>

namespace {

constexpr int kThreads = 256;

struct Window {
    const float* row;
    int len;
    __device__ float erode(int i) const {  // min over [i-1, i+1] within the row
        float m = row[i];
        if (i > 0) m = fminf(m, row[i - 1]);
        if (i + 1 < len) m = fminf(m, row[i + 1]);
        return m;
    }
};

__device__ float open(const Window& w, int i) {  // dilation of the erosion: max over [i-1, i+1] of erode
    float m = w.erode(i);
    if (i > 0) m = fmaxf(m, w.erode(i - 1));
    if (i + 1 < w.len) m = fmaxf(m, w.erode(i + 1));
    return m;
}

__global__ void __launch_bounds__(kThreads) morph_open_kernel(const float* __restrict__ x, float* __restrict__ y, int len) {
    const int64_t row = blockIdx.y;
    const int i = blockIdx.x * kThreads + threadIdx.x;
    if (i >= len) return;
    const Window w{x + row * len, len};
    y[row * len + i] = open(w, i);
}

}  // namespace

cudaError_t launch_morph_open(const float* x, float* y, int64_t rows, int len, cudaStream_t stream) {
    if (rows == 0 || len == 0) return cudaSuccess;
    const dim3 grid((len + kThreads - 1) / kThreads, static_cast<unsigned>(rows));
    morph_open_kernel<<<grid, kThreads, 0, stream>>>(x, y, len);
    return cudaGetLastError();
}
