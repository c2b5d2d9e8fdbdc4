// conv_relu_binding.cpp -- Python entry point: relu(conv2d(x, weight) + bias), NCHW fp32.
// The convolution is cuDNN (kernels/conv_cudnn.cpp) into a freshly allocated output, with a workspace
// allocated through torch's allocator; bias + ReLU is one custom epilogue kernel (bias_relu_nchw.cu).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <stdexcept>

#include "../binding_registry.h"
#include "conv_cudnn.h"

extern "C" void launch_bias_relu_nchw(float* y, const float* bias, int64_t n, int64_t channels, int64_t plane_size,
                                      cudaStream_t stream);

torch::Tensor conv2d_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, int64_t pad,
                                  int64_t stride) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda(), "all inputs must be CUDA tensors");
        TORCH_CHECK(t->scalar_type() == torch::kFloat32, "all inputs must be float32");
        TORCH_CHECK(t->is_contiguous(), "all inputs must be contiguous (NCHW)");
    }
    TORCH_CHECK(x.dim() == 4 && weight.dim() == 4 && bias.dim() == 1, "expected x (N,C,H,W), weight (K,C,R,S), bias (K)");
    TORCH_CHECK(weight.size(1) == x.size(1) && bias.size(0) == weight.size(0), "channel mismatch");
    TORCH_CHECK(stride >= 1 && pad >= 0, "bad stride or padding");
    const c10::cuda::CUDAGuard guard(x.device());

    ConvShape s{};
    s.n = x.size(0); s.c = x.size(1); s.h = x.size(2); s.w = x.size(3);
    s.k = weight.size(0); s.r = weight.size(2); s.s = weight.size(3);
    s.pad_h = s.pad_w = static_cast<int>(pad);
    s.stride_h = s.stride_w = static_cast<int>(stride);
    s.dil_h = s.dil_w = 1;
    s.out_h = (s.h + 2 * pad - s.r) / stride + 1;
    s.out_w = (s.w + 2 * pad - s.s) / stride + 1;
    TORCH_CHECK(s.out_h > 0 && s.out_w > 0, "empty convolution output");

    torch::Tensor y = torch::empty({s.n, s.k, s.out_h, s.out_w}, x.options());
    const int device = x.get_device();
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    try {
        const size_t ws_bytes = conv2d_cudnn_workspace(s, device);
        torch::Tensor workspace = torch::empty({static_cast<int64_t>(ws_bytes > 0 ? ws_bytes : 1)},
                                               x.options().dtype(torch::kUInt8));
        conv2d_cudnn_forward(s, x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(),
                             workspace.data_ptr(), ws_bytes, device, stream);
    } catch (const std::exception& e) {
        TORCH_CHECK(false, "cuDNN convolution: ", e.what());
    }
    launch_bias_relu_nchw(y.data_ptr<float>(), bias.data_ptr<float>(), s.n, s.k, s.out_h * s.out_w, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_relu_nchw launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_conv_relu(pybind11::module& m) {
    m.def("conv2d_relu_forward", &conv2d_relu_forward, "relu(conv2d(x, weight) + bias) via cuDNN + epilogue",
          py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("pad"), py::arg("stride") = 1);
}
REGISTER_BINDING(conv_relu, register_conv_relu);
