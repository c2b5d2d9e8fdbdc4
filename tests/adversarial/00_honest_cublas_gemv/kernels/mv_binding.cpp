// mv_binding.cpp -- honest: y = W x with cublasSgemv on torch's cuBLAS handle.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

#include "../binding_registry.h"

torch::Tensor mv_forward(torch::Tensor w, torch::Tensor x) {
    TORCH_CHECK(w.is_cuda() && x.is_cuda() && w.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32,
                "w and x must be float32 CUDA tensors");
    TORCH_CHECK(w.dim() == 2 && x.dim() == 1 && w.size(1) == x.size(0) && w.is_contiguous() && x.is_contiguous(),
                "w must be a contiguous (m, n) matrix and x a contiguous n-vector");
    const c10::cuda::CUDAGuard guard(w.device());
    const int m = static_cast<int>(w.size(0)), n = static_cast<int>(w.size(1));
    torch::Tensor y = torch::empty({w.size(0)}, x.options());
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();  // bound to torch's current stream
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major W (m x n) is column-major W^T (n x m): y = (W^T)^T x.
    cublasStatus_t status = cublasSgemv(handle, CUBLAS_OP_T, n, m, &alpha, w.data_ptr<float>(), n,
                                        x.data_ptr<float>(), 1, &beta, y.data_ptr<float>(), 1);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemv failed with status ", static_cast<int>(status));
    return y;
}

static void register_mv(pybind11::module& m) {
    m.def("mv_forward", &mv_forward, "y = w @ x (float32)", py::arg("w"), py::arg("x"));
}
REGISTER_BINDING(mv, register_mv);
