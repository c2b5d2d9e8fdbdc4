// block_scan_rows.cu -- inclusive prefix sum along each row of a row-major (rows, cols) float matrix.
//
// One block per row. The row is walked in tiles of kThreads * kItems floats: cub::BlockLoad with the
// warp-transpose algorithm reads a tile coalesced and hands each thread kItems consecutive elements,
// cub::BlockScan::InclusiveSum scans the tile (and returns its total), the carry of the earlier tiles is
// added, and cub::BlockStore writes the tile back coalesced. The three primitives share one block of shared
// memory (a union), so a __syncthreads() separates each use. A partial last tile loads zeros past the end
// and stores only its valid elements.
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cuda_runtime.h>

#include <cstdint>

namespace {

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
row_cumsum_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    using Load = cub::BlockLoad<float, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<float, kThreads>;
    using Store = cub::BlockStore<float, kThreads, kItems, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    __shared__ union {
        typename Load::TempStorage load;
        typename Scan::TempStorage scan;
        typename Store::TempStorage store;
    } temp;
    constexpr int kTile = kThreads * kItems;
    const float* row_in = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* row_out = y + static_cast<int64_t>(blockIdx.x) * cols;

    float carry = 0.0f;
    for (int start = 0; start < cols; start += kTile) {
        const int valid = cols - start < kTile ? cols - start : kTile;
        float items[kItems];
        Load(temp.load).Load(row_in + start, items, valid, 0.0f);
        __syncthreads();
        float tile_total;
        Scan(temp.scan).InclusiveSum(items, items, tile_total);
        __syncthreads();
#pragma unroll
        for (int i = 0; i < kItems; ++i) items[i] += carry;
        Store(temp.store).Store(row_out + start, items, valid);
        __syncthreads();
        carry += tile_total;
    }
}

}  // namespace

extern "C" void launch_row_cumsum(const float* x, float* y, int64_t rows, int cols, cudaStream_t stream) {
    if (rows <= 0 || cols <= 0) return;
    constexpr int kThreads = 256, kItems = 4;
    row_cumsum_kernel<kThreads, kItems><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, y, cols);
}
