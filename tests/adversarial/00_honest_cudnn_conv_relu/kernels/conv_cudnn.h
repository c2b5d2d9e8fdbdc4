// conv_cudnn.h -- the cuDNN convolution helper (conv_cudnn.cpp) as seen by the binding.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

struct ConvShape {
    int64_t n, c, h, w;     // input NCHW
    int64_t k, r, s;        // filters: k output channels of c x r x s
    int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
    int64_t out_h, out_w;
};

size_t conv2d_cudnn_workspace(const ConvShape& shape, int device);
void conv2d_cudnn_forward(const ConvShape& shape, const float* x, const float* w, float* y, void* workspace,
                          size_t workspace_bytes, int device, cudaStream_t stream);
