// gated_chain_binding.cpp -- the gated chain's entry point: checks, the output, one launch on torch's
// current stream.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_gated_chain(const float* x, const float* gate, float* y, int64_t rows, int64_t cols,
                                   float scale, float shift, float lo, float hi, cudaStream_t stream);

static torch::Tensor gated_chain_forward(torch::Tensor x, torch::Tensor gate, double scale, double shift, double lo,
                                         double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() == 2,
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(gate.is_cuda() && gate.scalar_type() == torch::kFloat32 && gate.is_contiguous() &&
                    gate.numel() == x.size(0),
                "gate must be a contiguous float32 CUDA tensor with one value per row of x");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    launch_gated_chain(x.data_ptr<float>(), gate.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1),
                       static_cast<float>(scale), static_cast<float>(shift), static_cast<float>(lo),
                       static_cast<float>(hi), c10::cuda::getCurrentCUDAStream().stream());
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gated_chain launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gated_chain(pybind11::module& m) {
    m.def("gated_chain_forward", &gated_chain_forward, "gate[:, None] * clamp(gelu(x * scale + shift), lo, hi)",
          py::arg("x"), py::arg("gate"), py::arg("scale"), py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(gated_chain, register_gated_chain);
