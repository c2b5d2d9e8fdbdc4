# Written for cuda-agent's importer tests: sources and functions are class attributes read through self,
# and __init__ needs the task's init inputs and builds parameters before it calls load_inline.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


class ModelNew(nn.Module):
    CUDA_SRC = """
#include <torch/extension.h>
__global__ void ln_kernel(const float* x, const float* w, const float* b, float* y, int cols, float eps) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    __shared__ float s1[256], s2[256];
    float a = 0.f, q = 0.f;
    for (int c = threadIdx.x; c < cols; c += 256) { a += row[c]; q += row[c] * row[c]; }
    s1[threadIdx.x] = a; s2[threadIdx.x] = q;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (threadIdx.x < s) { s1[threadIdx.x] += s1[threadIdx.x + s]; s2[threadIdx.x] += s2[threadIdx.x + s]; }
        __syncthreads();
    }
    float mean = s1[0] / cols, inv = rsqrtf(fmaxf(s2[0] / cols - mean * mean, 0.f) + eps);
    for (int c = threadIdx.x; c < cols; c += 256) out[c] = (row[c] - mean) * inv * w[c] + b[c];
}
torch::Tensor ln_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    auto y = torch::empty_like(x);
    int cols = w.numel();
    ln_kernel<<<x.numel() / cols, 256>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                       y.data_ptr<float>(), cols, (float)eps);
    return y;
}
"""
    CPP_SRC = "torch::Tensor ln_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"
    FUNCS = ["ln_forward"]

    def __init__(self, normalized_shape, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.ext = load_inline(name="ln_ext", cpp_sources=self.CPP_SRC, cuda_sources=self.CUDA_SRC,
                               functions=self.FUNCS)

    def forward(self, x):
        return self.ext.ln_forward(x, self.weight, self.bias, self.eps)
