# The module import spelled out, load_inline called in __init__, and cpp_sources with their own
# PYBIND11_MODULE (functions=None).
import torch
import torch.nn as nn
import torch.utils.cpp_extension

layernorm_cuda_source = r"""
#include <torch/extension.h>

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ y, int cols, float eps) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    __shared__ float s_sum[256];
    __shared__ float s_sq[256];
    float sum = 0.f, sq = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = row[c];
        sum += v;
        sq += v * v;
    }
    s_sum[threadIdx.x] = sum;
    s_sq[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
            s_sq[threadIdx.x] += s_sq[threadIdx.x + s];
        }
        __syncthreads();
    }
    const float mean = s_sum[0] / cols;
    const float var = fmaxf(s_sq[0] / cols - mean * mean, 0.f);
    const float inv = rsqrtf(var + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = (row[c] - mean) * inv * w[c] + b[c];
}

torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
    auto y = torch::empty_like(x);
    const int cols = x.size(-1);
    const int rows = x.numel() / cols;
    layernorm_kernel<<<rows, 256>>>(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                    y.data_ptr<float>(), cols, (float)eps);
    return y;
}
"""

layernorm_cpp_source = """
torch::Tensor layernorm_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("layernorm_forward", &layernorm_forward, "LayerNorm over the last dimension");
}
"""


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape, eps=eps)
        self.ext = torch.utils.cpp_extension.load_inline(
            name="layernorm_ext", cpp_sources=layernorm_cpp_source, cuda_sources=layernorm_cuda_source
        )

    def forward(self, x):
        return self.ext.layernorm_forward(x, self.ln.weight, self.ln.bias, self.ln.eps)
