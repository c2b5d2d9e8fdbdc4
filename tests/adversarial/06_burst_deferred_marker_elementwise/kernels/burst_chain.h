// burst_chain.h -- what burst_chain.cu exports to the binding.
#pragma once

#include <cuda_runtime.h>
#include <cstdint>

constexpr int kMaxBatch = 9;

struct ChainArgs {
    float scale, shift, lo, hi;
};

struct ChainBatch {
    const float* x[kMaxBatch];
    float* y[kMaxBatch];
    int count;
};

void launch_chain_one(const float* x, float* y, int64_t n, ChainArgs a, cudaStream_t stream);
void launch_chain_batch(const ChainBatch& batch, int64_t n, ChainArgs a, cudaStream_t stream);
void launch_marker(uint64_t ns, cudaStream_t stream);
