// mirror.cu -- complete a symmetric row-major (n, n) matrix whose upper triangle (col >= row) is written:
// c[r][col] = c[col][r] for every r > col.
//
// 32 x 32 tiles, one block of 32 x 8 threads per tile on or below the diagonal (tile row ti >= tile column tj;
// blocks above it exit). A block reads the mirror tile (rows of tile tj, columns of tile ti: upper triangle)
// row by row, coalesced, into shared memory padded to 33 columns (no bank conflicts on the transposed read),
// and writes the transpose into its own tile, again row by row. Only the strictly lower elements are written,
// so no block writes what another reads: off-diagonal blocks read tiles strictly above the diagonal, which
// nobody writes, and a diagonal block reads its own tile entirely before writing (the __syncthreads between).
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kTile = 32;
constexpr int kRows = 8;

__global__ void __launch_bounds__(kTile * kRows) mirror_upper_to_lower(float* __restrict__ c, int n) {
    const int ti = blockIdx.y, tj = blockIdx.x;
    if (tj > ti) return;
    __shared__ float tile[kTile][kTile + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    // Source: rows tj * 32 + y, columns ti * 32 + tx (tile[y][tx]).
    for (int y = ty; y < kTile; y += kRows) {
        const int row = tj * kTile + y, col = ti * kTile + tx;
        if (row < n && col < n) tile[y][tx] = c[static_cast<int64_t>(row) * n + col];
    }
    __syncthreads();
    // Destination: row r = ti * 32 + y, column q = tj * 32 + tx, value c[q][r] = tile[tx][y].
    for (int y = ty; y < kTile; y += kRows) {
        const int r = ti * kTile + y, q = tj * kTile + tx;
        if (r < n && q < n && r > q) c[static_cast<int64_t>(r) * n + q] = tile[tx][y];
    }
}

}  // namespace

extern "C" void launch_mirror_upper_to_lower(float* c, int n, cudaStream_t stream) {
    if (n <= 1) return;
    const unsigned tiles = static_cast<unsigned>((n + kTile - 1) / kTile);
    mirror_upper_to_lower<<<dim3(tiles, tiles), dim3(kTile, kRows), 0, stream>>>(c, n);
}
