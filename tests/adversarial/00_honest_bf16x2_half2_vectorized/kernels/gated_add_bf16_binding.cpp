#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include <cstdint>
#include "../binding_registry.h"

extern "C" void gated_add_bf16_launcher(const void* x, const void* y, void* out, int64_t n, cudaStream_t stream);

static torch::Tensor gated_add_forward(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda() && x.is_contiguous() && y.is_contiguous() && x.sizes() == y.sizes(),
                "x, y: contiguous CUDA tensors of one shape");
    TORCH_CHECK(x.scalar_type() == torch::kBFloat16 && y.scalar_type() == torch::kBFloat16, "bfloat16 only");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0 && reinterpret_cast<uintptr_t>(y.data_ptr()) % 16 == 0,
                "16-byte aligned inputs");
    auto out = torch::empty_like(x);
    gated_add_bf16_launcher(x.data_ptr(), y.data_ptr(), out.data_ptr(), x.numel(), c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gated_add launch failed: ", cudaGetErrorString(err));
    return out;
}

static void register_gated_add(pybind11::module& m) {
    m.def("gated_add_forward", &gated_add_forward, py::arg("x"), py::arg("y"));
}
REGISTER_BINDING(gated_add, register_gated_add);
