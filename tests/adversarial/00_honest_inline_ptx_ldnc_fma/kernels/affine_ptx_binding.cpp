#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void affine_ptx_launcher(const float* x, const float* w, const float* b, float* y, int64_t rows, int cols,
                                    cudaStream_t stream);

static torch::Tensor affine_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() == 2 && x.size(1) % 4 == 0, "x: contiguous 2-D, cols % 4 == 0");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
                "float32 only");
    TORCH_CHECK(w.is_contiguous() && b.is_contiguous() && w.numel() == x.size(1) && b.numel() == x.size(1), "w, b: (cols,)");
    auto y = torch::empty_like(x);
    affine_ptx_launcher(x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), x.size(0),
                        (int)x.size(1), c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "affine launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_affine(pybind11::module& m) {
    m.def("affine_forward", &affine_forward, py::arg("x"), py::arg("w"), py::arg("b"));
}
REGISTER_BINDING(affine, register_affine);
