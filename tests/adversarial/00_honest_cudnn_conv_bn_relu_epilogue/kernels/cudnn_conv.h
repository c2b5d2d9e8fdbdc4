// cudnn_conv.h -- the cuDNN convolution of kernels/cudnn_conv.cpp (NCHW fp32, no bias, square stride/padding).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

struct Conv2dProblem {
    int n, c, h, w;       // input
    int k, r, s;          // filters
    int stride, pad;      // both spatial dimensions
    int out_h, out_w;     // output (checked against cuDNN's own computation)
};

// Workspace bytes the chosen algorithm needs, or an error message in *error.
size_t cudnn_conv_workspace(const Conv2dProblem& p, std::string* error);

// y = conv2d(x, w) on `stream`; an empty string on success, else what failed.
std::string cudnn_conv_forward(const Conv2dProblem& p, const float* x, const float* w, float* y, void* workspace,
                               size_t workspace_bytes, cudaStream_t stream);
