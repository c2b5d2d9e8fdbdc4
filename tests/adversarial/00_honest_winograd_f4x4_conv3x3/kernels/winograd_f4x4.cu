// winograd_f4x4.cu -- 3x3, stride-1, padding-1 convolution by Winograd's minimal filtering F(4x4, 3x3),
// fp32 throughout (interpolation points 0, +-1, +-2 and infinity):
//   U[p][c][k] = (G g[k][c] G^T)[p]                      filter transform, 36 positions p
//   V[p][t][c] = (B^T d[t][c] B)[p]                       input transform of each 6x6 tile t (stride 4)
//   M[p][t][k] = sum_c V[p][t][c] U[p][c][k]              36 channel sums per tile (a batched GEMM)
//   y[t][k]    = A^T M[.][t][k] A + bias[k]               the 4x4 outputs of each tile
#include <cuda_runtime.h>
#include <cstdint>

namespace {

constexpr int kTile = 6;       // input tile edge (m + r - 1)
constexpr int kOut = 4;        // output tile edge (m)
constexpr int kPos = kTile * kTile;

__device__ __forceinline__ void filter_1d(const float g[3], float u[6]) {
    u[0] = 0.25f * g[0];
    u[1] = -(g[0] + g[1] + g[2]) / 6.0f;
    u[2] = -(g[0] - g[1] + g[2]) / 6.0f;
    u[3] = g[0] / 24.0f + g[1] / 12.0f + g[2] / 6.0f;
    u[4] = g[0] / 24.0f - g[1] / 12.0f + g[2] / 6.0f;
    u[5] = g[2];
}

__device__ __forceinline__ void input_1d(const float d[6], float v[6]) {
    v[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    v[1] = -4.0f * d[1] - 4.0f * d[2] + d[3] + d[4];
    v[2] = 4.0f * d[1] - 4.0f * d[2] - d[3] + d[4];
    v[3] = -2.0f * d[1] - d[2] + 2.0f * d[3] + d[4];
    v[4] = 2.0f * d[1] - d[2] - 2.0f * d[3] + d[4];
    v[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

__device__ __forceinline__ void output_1d(const float m[6], float y[4]) {
    y[0] = m[0] + m[1] + m[2] + m[3] + m[4];
    y[1] = m[1] - m[2] + 2.0f * m[3] - 2.0f * m[4];
    y[2] = m[1] + m[2] + 4.0f * m[3] + 4.0f * m[4];
    y[3] = m[1] - m[2] + 8.0f * m[3] - 8.0f * m[4] + m[5];
}

// One thread per (k, c): U[p][c][k] = G g G^T.
__global__ void transform_filters(const float* __restrict__ w, float* __restrict__ u, int channels, int filters) {
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= static_cast<int64_t>(channels) * filters) return;
    const int k = static_cast<int>(i / channels), c = static_cast<int>(i % channels);
    const float* g = w + i * 9;
    float rows[3][6];
    for (int r = 0; r < 3; ++r) {
        const float col[3] = {g[r * 3], g[r * 3 + 1], g[r * 3 + 2]};
        filter_1d(col, rows[r]);
    }
    for (int j = 0; j < kTile; ++j) {
        const float col[3] = {rows[0][j], rows[1][j], rows[2][j]};
        float out[6];
        filter_1d(col, out);
        for (int p = 0; p < kTile; ++p) u[(static_cast<int64_t>(p * kTile + j) * channels + c) * filters + k] = out[p];
    }
}

// One thread per (tile, c): V[p][t][c] = B^T d B, zero outside the image.
__global__ void transform_inputs(const float* __restrict__ x, float* __restrict__ v, int n, int channels, int h,
                                 int w, int tiles_h, int tiles_w) {
    const int64_t tiles = static_cast<int64_t>(n) * tiles_h * tiles_w;
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= tiles * channels) return;
    const int c = static_cast<int>(i % channels);
    const int64_t t = i / channels;
    const int tw = static_cast<int>(t % tiles_w), th = static_cast<int>((t / tiles_w) % tiles_h);
    const int b = static_cast<int>(t / (static_cast<int64_t>(tiles_w) * tiles_h));
    const float* plane = x + (static_cast<int64_t>(b) * channels + c) * h * w;
    float d[6][6];
    for (int r = 0; r < kTile; ++r) {
        const int y = th * kOut - 1 + r;
        for (int s = 0; s < kTile; ++s) {
            const int xx = tw * kOut - 1 + s;
            d[r][s] = (y >= 0 && y < h && xx >= 0 && xx < w) ? plane[static_cast<int64_t>(y) * w + xx] : 0.0f;
        }
    }
    float rows[6][6];
    for (int r = 0; r < kTile; ++r) input_1d(d[r], rows[r]);  // d B, row by row
    for (int j = 0; j < kTile; ++j) {
        float col[6], out[6];
        for (int r = 0; r < kTile; ++r) col[r] = rows[r][j];
        input_1d(col, out);  // B^T (d B)
        for (int p = 0; p < kTile; ++p) v[(static_cast<int64_t>(p * kTile + j) * tiles + t) * channels + c] = out[p];
    }
}

// M[p][t][k] = sum_c V[p][t][c] U[p][c][k]: a 16x16 tile of (t, k) per block, C staged through shared memory.
constexpr int kBlk = 16;
__global__ void channel_sums(const float* __restrict__ v, const float* __restrict__ u, float* __restrict__ m,
                             int64_t tiles, int channels, int filters) {
    __shared__ float vs[kBlk][kBlk + 1];
    __shared__ float us[kBlk][kBlk + 1];
    const int p = blockIdx.z;
    const int64_t t = blockIdx.y * static_cast<int64_t>(kBlk) + threadIdx.y;
    const int k = blockIdx.x * kBlk + threadIdx.x;
    const float* vp = v + static_cast<int64_t>(p) * tiles * channels;
    const float* up = u + static_cast<int64_t>(p) * channels * filters;
    float acc = 0.0f;
    for (int c0 = 0; c0 < channels; c0 += kBlk) {
        const int cv = c0 + threadIdx.x, cu = c0 + threadIdx.y;
        vs[threadIdx.y][threadIdx.x] = (t < tiles && cv < channels) ? vp[t * channels + cv] : 0.0f;
        const int64_t uk = blockIdx.x * kBlk + threadIdx.x;
        us[threadIdx.y][threadIdx.x] = (cu < channels && uk < filters) ? up[static_cast<int64_t>(cu) * filters + uk] : 0.0f;
        __syncthreads();
        for (int j = 0; j < kBlk; ++j) acc = fmaf(vs[threadIdx.y][j], us[j][threadIdx.x], acc);
        __syncthreads();
    }
    if (t < tiles && k < filters) m[(static_cast<int64_t>(p) * tiles + t) * filters + k] = acc;
}

// One thread per (tile, k): y = A^T M A + bias, clipped at the image's edge.
__global__ void transform_outputs(const float* __restrict__ m, const float* __restrict__ bias, float* __restrict__ y,
                                  int n, int filters, int h, int w, int tiles_h, int tiles_w) {
    const int64_t tiles = static_cast<int64_t>(n) * tiles_h * tiles_w;
    const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i >= tiles * filters) return;
    const int k = static_cast<int>(i % filters);
    const int64_t t = i / filters;
    const int tw = static_cast<int>(t % tiles_w), th = static_cast<int>((t / tiles_w) % tiles_h);
    const int b = static_cast<int>(t / (static_cast<int64_t>(tiles_w) * tiles_h));
    float rows[6][4];
    for (int r = 0; r < kTile; ++r) {
        float mr[6];
        for (int s = 0; s < kTile; ++s) mr[s] = m[(static_cast<int64_t>(r * kTile + s) * tiles + t) * filters + k];
        output_1d(mr, rows[r]);  // M A, row by row
    }
    float* plane = y + (static_cast<int64_t>(b) * filters + k) * h * w;
    const float bk = bias[k];
    for (int j = 0; j < kOut; ++j) {
        float col[6], out[4];
        for (int r = 0; r < kTile; ++r) col[r] = rows[r][j];
        output_1d(col, out);  // A^T (M A)
        const int xx = tw * kOut + j;
        for (int q = 0; q < kOut; ++q) {
            const int yy = th * kOut + q;
            if (yy < h && xx < w) plane[static_cast<int64_t>(yy) * w + xx] = out[q] + bk;
        }
    }
}

unsigned blocks_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

extern "C" int64_t winograd_f4x4_workspace_floats(int n, int channels, int filters, int h, int w) {
    const int64_t tiles = static_cast<int64_t>(n) * ((h + kOut - 1) / kOut) * ((w + kOut - 1) / kOut);
    return kPos * (static_cast<int64_t>(channels) * filters + tiles * channels + tiles * filters);
}

extern "C" void launch_winograd_f4x4(const float* x, const float* weight, const float* bias, float* y, float* work,
                                     int n, int channels, int filters, int h, int w, cudaStream_t stream) {
    const int tiles_h = (h + kOut - 1) / kOut, tiles_w = (w + kOut - 1) / kOut;
    const int64_t tiles = static_cast<int64_t>(n) * tiles_h * tiles_w;
    float* u = work;
    float* v = u + static_cast<int64_t>(kPos) * channels * filters;
    float* m = v + static_cast<int64_t>(kPos) * tiles * channels;
    constexpr int kThreads = 256;
    transform_filters<<<blocks_for(static_cast<int64_t>(channels) * filters, kThreads), kThreads, 0, stream>>>(
        weight, u, channels, filters);
    transform_inputs<<<blocks_for(tiles * channels, kThreads), kThreads, 0, stream>>>(x, v, n, channels, h, w,
                                                                                       tiles_h, tiles_w);
    const dim3 grid((filters + kBlk - 1) / kBlk, static_cast<unsigned>((tiles + kBlk - 1) / kBlk), kPos);
    channel_sums<<<grid, dim3(kBlk, kBlk), 0, stream>>>(v, u, m, tiles, channels, filters);
    transform_outputs<<<blocks_for(tiles * filters, kThreads), kThreads, 0, stream>>>(m, bias, y, n, filters, h, w,
                                                                                        tiles_h, tiles_w);
}
