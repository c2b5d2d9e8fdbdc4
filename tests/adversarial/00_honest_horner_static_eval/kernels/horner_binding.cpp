#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include "../binding_registry.h"

extern "C" void horner_launcher(const float* x, float* y, int64_t n, cudaStream_t stream);

static torch::Tensor horner_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32, "x: contiguous float32 CUDA");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0, "x must be 16-byte aligned");
    auto y = torch::empty_like(x);
    horner_launcher(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "horner launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_horner(pybind11::module& m) { m.def("horner_forward", &horner_forward, py::arg("x")); }
REGISTER_BINDING(horner, register_horner);
