// axpy_binding.cpp -- entry point for out = x * alpha + y; the work is cuBLAS Scopy + Saxpy
// (kernels/axpy_blas.cpp), no custom kernel.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cublas_v2.h>

#include "../binding_registry.h"

cublasStatus_t blas_axpy_into(const float* x, const float* y, float* out, float alpha, int64_t n, cudaStream_t stream);

torch::Tensor axpy_forward(torch::Tensor x, torch::Tensor y, double alpha) {
    for (const torch::Tensor* t : {&x, &y}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.sizes() == y.sizes(), "x and y must have the same shape");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor out = torch::empty_like(x);
    const cublasStatus_t status = blas_axpy_into(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(),
                                                 static_cast<float>(alpha), x.numel(),
                                                 c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cuBLAS axpy failed with status ", static_cast<int>(status));
    return out;
}

static void register_axpy(pybind11::module& m) {
    m.def("axpy_forward", &axpy_forward, "x * alpha + y", py::arg("x"), py::arg("y"), py::arg("alpha"));
}
REGISTER_BINDING(axpy, register_axpy);
