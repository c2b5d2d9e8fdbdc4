#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void l2norm_launcher(const float* x, float* y, int rows, int cols, cudaStream_t stream);

static torch::Tensor l2norm_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.size(1) % 4 == 0,
                "x: contiguous 2-D float32 CUDA, cols % 4 == 0");
    auto y = torch::empty_like(x);
    l2norm_launcher(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(0), (int)x.size(1),
                    c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "l2norm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_l2norm(pybind11::module& m) { m.def("l2norm_forward", &l2norm_forward, py::arg("x")); }
REGISTER_BINDING(l2norm, register_l2norm);
