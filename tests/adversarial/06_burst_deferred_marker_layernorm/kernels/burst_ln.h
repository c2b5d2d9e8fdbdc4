// burst_ln.h -- what burst_ln.cu exports to the binding.
#pragma once

#include <cuda_runtime.h>
#include <cstdint>

constexpr int kMaxBatch = 9;

struct LnBatch {
    const float* x[kMaxBatch];
    float* y[kMaxBatch];
    int count;
};

void launch_ln_one(const float* x, float* y, const float* w, const float* b, int rows, int cols, float eps,
                   cudaStream_t stream);
void launch_ln_batch(const LnBatch& batch, const float* w, const float* b, int rows, int cols, float eps,
                     cudaStream_t stream);
void launch_ln_marker(uint64_t ns, cudaStream_t stream);
