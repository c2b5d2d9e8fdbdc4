// gemm_3xtf32.cu -- y = a @ b for fp32 a (M, K) and b (K, N), row-major, to fp32 accuracy on TF32 tensor
// cores with the 3xTF32 split (WMMA m16n16k8, precision::tf32), split-K with a deterministic final sum.
//
// Each operand value x is split into hi = tf32(x) and lo = tf32(x - hi) (cvt.rna.tf32.f32 through
// wmma::__float_to_tf32; x - hi is exact in fp32). hi carries 11 significant bits and lo the next 11, so
// hi + lo keeps x to about 2^-22 of itself: the low mantissa bits of the inputs reach the result. Each
// product is a_hi b_hi + a_hi b_lo + a_lo b_hi (each of the three exact in fp32; a_lo b_lo, about 2^-22 of
// the product, is dropped), accumulated in fp32.
//
// The tensor core's own accumulation is not round-to-nearest, so on one-signed data a long chain of MMAs
// into one accumulator would drift one way. Each 32-wide K tile is therefore accumulated by the MMAs into a
// fresh fragment (12 MMA steps) and then added into the running fp32 accumulator with ordinary fp32 adds
// (round to nearest); the K slices of the split are summed in slice order by a second kernel.
//
// Block: 64 x 64 output tile of one K slice, 4 warps, each warp a 32 x 32 quadrant (2 x 2 fragments of
// 16 x 16). Operands are staged through shared memory 32 columns of K at a time, zero-padded outside the
// matrices (a zero splits into zero and zero), so any M, N, K works.
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

namespace {

using namespace nvcuda;

constexpr int BM = 64, BN = 64, BK = 32;  // block tile: BM x BN outputs, BK of K per stage
constexpr int kWarps = 4, kThreads = kWarps * 32;
constexpr int WM = 32, WN = 32;           // warp tile (2 x 2 fragments)
constexpr int FM = 16, FN = 16, FK = 8;   // WMMA tf32 shape m16n16k8
// Leading dimensions of the shared tiles, in floats: multiples of 4 (16 bytes) as load/store_matrix_sync
// require, padded against bank conflicts. Every fragment pointer below is a multiple of 32 bytes from the
// 128-byte-aligned base: rows are multiples of 16 (16 * 36 * 4 and 16 * 68 * 4 bytes are multiples of 32),
// K offsets multiples of 8 floats, column offsets multiples of 16 floats.
constexpr int LDA = BK + 4;  // As: BM rows (m) x BK columns (k)
constexpr int LDB = BN + 4;  // Bs: BK rows (k) x BN columns (n)
constexpr int LDC = BN + 4;  // Cs: BM rows (m) x BN columns (n)

static_assert(BM == 2 * WM && BN == 2 * WN && kWarps == 4, "four warps in a 2 x 2 arrangement");
static_assert(WM == 2 * FM && WN == 2 * FN && BK % FK == 0, "2 x 2 fragments per warp");
static_assert(LDA % 4 == 0 && LDB % 4 == 0 && LDC % 4 == 0, "WMMA leading dimensions: multiples of 16 bytes");

using FragA = wmma::fragment<wmma::matrix_a, FM, FN, FK, wmma::precision::tf32, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, FM, FN, FK, wmma::precision::tf32, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, FM, FN, FK, float>;

// hi holds fp32 values as loaded; afterwards hi = tf32(x) and lo = tf32(x - hi), element by element (a
// fragment's elements map to the same matrix positions in every fragment of its type).
template <class Frag>
__device__ __forceinline__ void split_tf32(Frag& hi, Frag& lo) {
#pragma unroll
    for (int t = 0; t < hi.num_elements; ++t) {
        const float x = hi.x[t];
        const float h = wmma::__float_to_tf32(x);
        hi.x[t] = h;
        lo.x[t] = wmma::__float_to_tf32(x - h);
    }
}

// part[z] (M x N, row-major) = sum over K tiles [z * tiles_per_split, (z + 1) * tiles_per_split) of
// a[:, tile] @ b[tile, :], for the block's 64 x 64 output tile.
__global__ void __launch_bounds__(kThreads)
gemm_3xtf32_partial(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ part, int M,
                    int N, int K, int tiles_per_split) {
    __shared__ __align__(128) float As[BM * LDA];
    __shared__ __align__(128) float Bs[BK * LDB];
    __shared__ __align__(128) float Cs[BM * LDC];

    const int warp = threadIdx.x / 32;
    const int wm = warp / 2, wn = warp % 2;  // the warp's quadrant of the block tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int k_tiles = (K + BK - 1) / BK;
    const int t_begin = blockIdx.z * tiles_per_split;
    const int t_end = min(k_tiles, t_begin + tiles_per_split);

    FragC acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int t = t_begin; t < t_end; ++t) {
        const int k0 = t * BK;
        // Stage a[row0 : row0 + BM, k0 : k0 + BK]: consecutive threads along k (coalesced rows of 128 bytes).
        for (int e = threadIdx.x; e < BM * BK; e += kThreads) {
            const int r = e / BK, c = e % BK;
            const int gr = row0 + r, gc = k0 + c;
            As[r * LDA + c] = (gr < M && gc < K) ? a[static_cast<int64_t>(gr) * K + gc] : 0.0f;
        }
        // Stage b[k0 : k0 + BK, col0 : col0 + BN]: consecutive threads along n.
        for (int e = threadIdx.x; e < BK * BN; e += kThreads) {
            const int r = e / BN, c = e % BN;
            const int gr = k0 + r, gc = col0 + c;
            Bs[r * LDB + c] = (gr < K && gc < N) ? b[static_cast<int64_t>(gr) * N + gc] : 0.0f;
        }
        __syncthreads();

        // This K tile's products, accumulated by the tensor cores into fresh fragments.
        FragC step[2][2];
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) wmma::fill_fragment(step[i][j], 0.0f);
#pragma unroll
        for (int kk = 0; kk < BK; kk += FK) {
            FragA a_hi[2], a_lo[2];
            FragB b_hi[2], b_lo[2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                wmma::load_matrix_sync(a_hi[i], As + (wm * WM + i * FM) * LDA + kk, LDA);
                split_tf32(a_hi[i], a_lo[i]);
            }
#pragma unroll
            for (int j = 0; j < 2; ++j) {
                wmma::load_matrix_sync(b_hi[j], Bs + kk * LDB + wn * WN + j * FN, LDB);
                split_tf32(b_hi[j], b_lo[j]);
            }
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    // the small cross terms first, then the main term
                    wmma::mma_sync(step[i][j], a_lo[i], b_hi[j], step[i][j]);
                    wmma::mma_sync(step[i][j], a_hi[i], b_lo[j], step[i][j]);
                    wmma::mma_sync(step[i][j], a_hi[i], b_hi[j], step[i][j]);
                }
        }
        // ... added into the running sums with fp32 adds (round to nearest).
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j)
#pragma unroll
                for (int e = 0; e < acc[i][j].num_elements; ++e) acc[i][j].x[e] += step[i][j].x[e];
        __syncthreads();  // before the next stage overwrites As and Bs
    }

    // Fragments -> shared tile -> the partial of this K slice, inside the matrix only.
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(Cs + (wm * WM + i * FM) * LDC + wn * WN + j * FN, acc[i][j], LDC,
                                    wmma::mem_row_major);
    __syncthreads();
    float* out = part + static_cast<int64_t>(blockIdx.z) * M * N;
    for (int e = threadIdx.x; e < BM * BN; e += kThreads) {
        const int r = e / BN, c = e % BN;
        const int gr = row0 + r, gc = col0 + c;
        if (gr < M && gc < N) out[static_cast<int64_t>(gr) * N + gc] = Cs[r * LDC + c];
    }
}

// y = sum of the split-K partials, in slice order (deterministic).
__global__ void sum_partials(const float* __restrict__ ws, float* __restrict__ y, int64_t total, int splits) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        float s = ws[i];
        for (int z = 1; z < splits; ++z) s += ws[static_cast<int64_t>(z) * total + i];
        y[i] = s;
    }
}

inline unsigned grid_for(int64_t n) {
    int64_t blocks = (n + 255) / 256;
    if (blocks > 132 * 16) blocks = 132 * 16;
    return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace

// The split of K for an (M, N, K) product: about two blocks per SM of an H100/H200 (132 SMs), at most 128
// slices, every slice non-empty. Depends on the shape only, so every call sums in the same order.
extern "C" void gemm_3xtf32_plan(int M, int N, int K, int* splits, int* tiles_per_split) {
    const int64_t tiles = static_cast<int64_t>((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    const int k_tiles = K > 0 ? (K + BK - 1) / BK : 1;
    int64_t want = (2 * 132 + tiles - 1) / (tiles > 0 ? tiles : 1);
    if (want > 128) want = 128;
    if (want > k_tiles) want = k_tiles;
    if (want < 1) want = 1;
    const int per = static_cast<int>((k_tiles + want - 1) / want);
    *tiles_per_split = per;
    *splits = (k_tiles + per - 1) / per;
}

extern "C" void launch_gemm_3xtf32(const float* a, const float* b, float* ws, float* y, int M, int N, int K,
                                   int splits, int tiles_per_split, cudaStream_t stream) {
    const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM, splits);
    gemm_3xtf32_partial<<<grid, kThreads, 0, stream>>>(a, b, ws, M, N, K, tiles_per_split);
    const int64_t total = static_cast<int64_t>(M) * N;
    sum_partials<<<grid_for(total), 256, 0, stream>>>(ws, y, total, splits);
}
