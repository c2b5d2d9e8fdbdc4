// winograd_binding.cpp -- Python entry point: conv2d(x, weight, bias), 3x3, stride 1, padding 1, NCHW fp32,
// by Winograd F(4x4, 3x3) (kernels/winograd_f4x4.cu) with a workspace from torch's allocator.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

extern "C" int64_t winograd_f4x4_workspace_floats(int n, int channels, int filters, int h, int w);
extern "C" void launch_winograd_f4x4(const float* x, const float* weight, const float* bias, float* y, float* work,
                                     int n, int channels, int filters, int h, int w, cudaStream_t stream);

torch::Tensor winograd_conv3x3_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 4 && weight.dim() == 4 && bias.dim() == 1, "expected x (N,C,H,W), weight (K,C,3,3), bias (K)");
    TORCH_CHECK(weight.size(2) == 3 && weight.size(3) == 3, "F(4x4, 3x3) takes 3x3 filters");
    TORCH_CHECK(weight.size(1) == x.size(1) && bias.size(0) == weight.size(0), "channel mismatch");
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    for (int64_t d : {x.size(0), x.size(1), x.size(2), x.size(3), weight.size(0)}) {
        TORCH_CHECK(d > 0 && d <= kIntMax, "bad convolution size");
    }
    const c10::cuda::CUDAGuard guard(x.device());
    const int n = static_cast<int>(x.size(0)), c = static_cast<int>(x.size(1)), h = static_cast<int>(x.size(2));
    const int w = static_cast<int>(x.size(3)), k = static_cast<int>(weight.size(0));
    torch::Tensor y = torch::empty({n, k, h, w}, x.options());
    torch::Tensor work = torch::empty({winograd_f4x4_workspace_floats(n, c, k, h, w)}, x.options());
    launch_winograd_f4x4(x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                         work.data_ptr<float>(), n, c, k, h, w, c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "winograd launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_winograd(pybind11::module& m) {
    m.def("winograd_conv3x3_forward", &winograd_conv3x3_forward, "conv2d 3x3 stride 1 padding 1 by Winograd F(4x4, 3x3)",
          py::arg("x"), py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(winograd, register_winograd);
