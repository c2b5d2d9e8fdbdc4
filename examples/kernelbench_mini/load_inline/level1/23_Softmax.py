# Positional arguments, a source built from constants (+ and an f-string), extra_cuda_cflags with a -D
# macro the kernel reads, a flag the judge does not take, and a build setting in os.environ.
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"

THREADS = 256

softmax_head = """
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cfloat>
"""

softmax_body = f"""
constexpr int kThreads = {THREADS};
""" + """
__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    __shared__ float shared[kThreads];
    float m = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += kThreads) m = fmaxf(m, row[c]);
    shared[threadIdx.x] = m;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
        __syncthreads();
    }
    m = shared[0];
    __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += kThreads) sum += SOFTMAX_EXP(row[c] - m);
    shared[threadIdx.x] = sum;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.f / shared[0];
    for (int c = threadIdx.x; c < cols; c += kThreads) out[c] = SOFTMAX_EXP(row[c] - m) * inv;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int rows = x.size(0), cols = x.size(1);
    softmax_kernel<<<rows, kThreads>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

softmax_cpp = "torch::Tensor softmax_cuda(torch::Tensor x);"

softmax_ext = load_inline(
    "softmax_ext",
    softmax_cpp,
    softmax_head + softmax_body,
    None,
    ["softmax_cuda"],
    extra_cuda_cflags=["-O3", "--use_fast_math", "-DSOFTMAX_EXP=__expf", "-maxrregcount=64"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return softmax_ext.softmax_cuda(x)
