// gate_binding.cpp -- gated_forward(x, gamma, alpha, beta, terms): the gated residual of kernels/gate_kit.cu
// into a fresh output, on torch's current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_gated(const float* x, float* y, const float* gamma, const float* alpha, const float* beta,
                             int64_t n, int64_t dim, int terms, cudaStream_t stream);

torch::Tensor gated_forward(torch::Tensor x, torch::Tensor gamma, torch::Tensor alpha, torch::Tensor beta,
                            int64_t terms) {
    for (const torch::Tensor* t : {&x, &gamma, &alpha, &beta}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    const int64_t dim = x.size(-1);
    TORCH_CHECK(dim % 4 == 0 && gamma.numel() == dim && beta.numel() == dim && alpha.numel() == 1,
                "expected gamma and beta of the last dimension (a multiple of 4) and a scalar alpha");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_gated(x.data_ptr<float>(), y.data_ptr<float>(), gamma.data_ptr<float>(), alpha.data_ptr<float>(),
                 beta.data_ptr<float>(), x.numel(), dim, static_cast<int>(terms),
                 c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gate(pybind11::module& m) {
    m.def("gated_forward", &gated_forward, "x + gamma * gelu(x) + alpha * tanh(x) + beta", py::arg("x"),
          py::arg("gamma"), py::arg("alpha"), py::arg("beta"), py::arg("terms") = 7);
}
REGISTER_BINDING(gate, register_gate);
