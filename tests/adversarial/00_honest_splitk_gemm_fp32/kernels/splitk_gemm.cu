// splitk_gemm.cu -- y = x * W^T + bias in fp32 with split-K. x is (M, K), W is (N, K) (nn.Linear's weight),
// both row-major. Kernel 1: grid (N / 64, M / 64, S); block z computes the 64 x 64 tile over its K slice with
// a shared-memory tiled SGEMM (16 x 16 threads, each a 4 x 4 micro-tile, BK = 16, fp32 FMA) and stores the
// partial tile in workspace[z]. Kernel 2: y = bias + sum over z of workspace[z] (in order of z).
// Needs M % 64 == 0, N % 64 == 0, K % (16 S) == 0 (the binding checks).
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int TM = 64, TN = 64, TK = 16;

__global__ void __launch_bounds__(256)
splitk_partial(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ ws, int M, int N, int K,
               int slice) {
    __shared__ float xs[TK][TM];  // transposed: xs[k][m]
    __shared__ float wsm[TK][TN];  // transposed: wsm[k][n]
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int row0 = blockIdx.y * TM, col0 = blockIdx.x * TN;
    const int kbegin = blockIdx.z * slice, kend = kbegin + slice;
    // loaders: 64 rows x 16 k = 256 float4, one per thread for each operand
    const int lr = threadIdx.x / 4, lc = (threadIdx.x % 4) * 4;
    float acc[4][4] = {};
    for (int k0 = kbegin; k0 < kend; k0 += TK) {
        const float4 xv = *reinterpret_cast<const float4*>(x + static_cast<int64_t>(row0 + lr) * K + k0 + lc);
        const float4 wv = *reinterpret_cast<const float4*>(w + static_cast<int64_t>(col0 + lr) * K + k0 + lc);
        xs[lc + 0][lr] = xv.x;
        xs[lc + 1][lr] = xv.y;
        xs[lc + 2][lr] = xv.z;
        xs[lc + 3][lr] = xv.w;
        wsm[lc + 0][lr] = wv.x;
        wsm[lc + 1][lr] = wv.y;
        wsm[lc + 2][lr] = wv.z;
        wsm[lc + 3][lr] = wv.w;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TK; ++kk) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = xs[kk][ty * 4 + i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = wsm[kk][tx * 4 + j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    float* out = ws + static_cast<int64_t>(blockIdx.z) * M * N;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float4 v = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(out + static_cast<int64_t>(row0 + ty * 4 + i) * N + col0 + tx * 4) = v;
    }
}

__global__ void splitk_reduce(const float* __restrict__ ws, const float* __restrict__ bias, float* __restrict__ y,
                              int64_t total, int N, int splits) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        float s = ws[i];
        for (int z = 1; z < splits; ++z) s += ws[static_cast<int64_t>(z) * total + i];
        y[i] = s + bias[i % N];
    }
}

}  // namespace

extern "C" void launch_linear_splitk(const float* x, const float* w, const float* bias, float* ws, float* y, int M,
                                     int N, int K, int splits, cudaStream_t stream) {
    splitk_partial<<<dim3(N / TN, M / TM, splits), 256, 0, stream>>>(x, w, ws, M, N, K, K / splits);
    const int64_t total = static_cast<int64_t>(M) * N;
    int64_t blocks = (total + 255) / 256;
    if (blocks > 132 * 32) blocks = 132 * 32;
    splitk_reduce<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(ws, bias, y, total, N, splits);
}
