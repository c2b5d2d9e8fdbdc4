// conv_bn_relu_binding.cpp -- Python entry point: relu(batch_norm_eval(conv2d(x, w, stride, pad))) for NCHW fp32:
// the convolution with cuDNN (kernels/cudnn_conv.cpp) into a fresh output, the workspace a torch::empty uint8
// tensor, then BatchNorm + ReLU in one epilogue kernel (kernels/bn_relu.cu), all on torch's current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <string>

#include "../binding_registry.h"
#include "cudnn_conv.h"

extern "C" void launch_bn_relu(float* y, const float* mean, const float* var, const float* gamma, const float* beta,
                               int64_t n, int channels, int64_t plane, float eps, cudaStream_t stream);

namespace {

torch::Tensor conv_bn_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor running_mean,
                                   torch::Tensor running_var, torch::Tensor gamma, torch::Tensor beta, double eps,
                                   int64_t stride, int64_t pad) {
    for (const torch::Tensor* t : {&x, &weight, &running_mean, &running_var, &gamma, &beta}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "all tensors must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 4 && weight.dim() == 4 && weight.size(1) == x.size(1), "expected x (N, C, H, W), w (K, C, R, S)");
    const int64_t k = weight.size(0);
    for (const torch::Tensor* t : {&running_mean, &running_var, &gamma, &beta})
        TORCH_CHECK(t->dim() == 1 && t->size(0) == k, "BatchNorm tensors must have one entry per output channel");
    TORCH_CHECK(stride >= 1 && pad >= 0, "bad stride or padding");
    const c10::cuda::CUDAGuard guard(x.device());

    Conv2dProblem p{};
    p.n = static_cast<int>(x.size(0)); p.c = static_cast<int>(x.size(1));
    p.h = static_cast<int>(x.size(2)); p.w = static_cast<int>(x.size(3));
    p.k = static_cast<int>(k); p.r = static_cast<int>(weight.size(2)); p.s = static_cast<int>(weight.size(3));
    p.stride = static_cast<int>(stride); p.pad = static_cast<int>(pad);
    p.out_h = static_cast<int>((p.h + 2 * pad - p.r) / stride + 1);
    p.out_w = static_cast<int>((p.w + 2 * pad - p.s) / stride + 1);
    TORCH_CHECK(p.out_h > 0 && p.out_w > 0, "empty convolution output");

    torch::Tensor y = torch::empty({p.n, p.k, p.out_h, p.out_w}, x.options());
    std::string error;
    const size_t ws_bytes = cudnn_conv_workspace(p, &error);
    TORCH_CHECK(error.empty(), "cuDNN: ", error);
    torch::Tensor workspace = torch::empty({static_cast<int64_t>(ws_bytes)}, x.options().dtype(torch::kUInt8));
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    error = cudnn_conv_forward(p, x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(),
                               ws_bytes > 0 ? workspace.data_ptr() : nullptr, ws_bytes, stream);
    TORCH_CHECK(error.empty(), "cuDNN: ", error);
    launch_bn_relu(y.data_ptr<float>(), running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
                   gamma.data_ptr<float>(), beta.data_ptr<float>(), p.n, p.k,
                   static_cast<int64_t>(p.out_h) * p.out_w, static_cast<float>(eps), stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bn_relu launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_conv_bn_relu(pybind11::module& m) {
    m.def("conv_bn_relu_forward", &conv_bn_relu_forward, "relu(batch_norm_eval(conv2d(x, w))) via cuDNN + epilogue",
          py::arg("x"), py::arg("weight"), py::arg("running_mean"), py::arg("running_var"), py::arg("gamma"),
          py::arg("beta"), py::arg("eps"), py::arg("stride"), py::arg("pad"));
}
REGISTER_BINDING(conv_bn_relu, register_conv_bn_relu);
