#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

cudaError_t launch_morph_open(const float* x, float* y, int64_t rows, int len, cudaStream_t stream);

static torch::Tensor morph_opening(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: (rows, len) float32");
    TORCH_CHECK(x.size(0) <= 65535, "rows index the grid's y dimension");
    const c10::cuda::CUDAGuard guard(x.device());
    auto y = torch::empty_like(x);
    const cudaError_t err = launch_morph_open(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), (int)x.size(1),
                                              c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "morph_opening failed: ", cudaGetErrorString(err));
    return y;
}

static void register_morph(pybind11::module& m) { m.def("morph_opening", &morph_opening, py::arg("x")); }
REGISTER_BINDING(morphology, register_morph);
