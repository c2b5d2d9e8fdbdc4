#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" cudaError_t l1norm_launcher(const float* x, float* inv, float* y, int rows, int cols, cudaStream_t stream);

static torch::Tensor l1norm_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32 && x.dim() == 2,
                "x: contiguous 2-D float32 CUDA");
    auto y = torch::empty_like(x);
    auto inv = torch::empty({x.size(0)}, x.options());
    cudaError_t err = l1norm_launcher(x.data_ptr<float>(), inv.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(0),
                                      (int)x.size(1), c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "l1norm launch failed: ", cudaGetErrorString(err));
    err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "l1norm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_l1norm(pybind11::module& m) { m.def("l1norm_forward", &l1norm_forward, py::arg("x")); }
REGISTER_BINDING(l1norm, register_l1norm);
