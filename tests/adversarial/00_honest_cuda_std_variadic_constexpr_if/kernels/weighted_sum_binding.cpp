#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void weighted_sum_launcher(const float* a, const float* b, const float* c, float* out, int64_t n,
                                      cudaStream_t stream);

static torch::Tensor weighted_sum_forward(torch::Tensor a, torch::Tensor b, torch::Tensor c) {
    for (const auto& t : {a, b, c})
        TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kFloat32 && t.sizes() == a.sizes(),
                    "a, b, c: contiguous float32 CUDA tensors of one shape");
    auto out = torch::empty_like(a);
    weighted_sum_launcher(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), out.data_ptr<float>(), a.numel(),
                          c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "weighted_sum launch failed: ", cudaGetErrorString(err));
    return out;
}

static void register_weighted_sum(pybind11::module& m) {
    m.def("weighted_sum_forward", &weighted_sum_forward, py::arg("a"), py::arg("b"), py::arg("c"));
}
REGISTER_BINDING(weighted_sum, register_weighted_sum);
