// linear_blas.cpp -- y = x W^T with cuBLAS; the handle is created once and kept in a static member.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

#define CUBLAS_CHECK(expr)                                                                     \
    do {                                                                                       \
        cublasStatus_t status_ = (expr);                                                       \
        TORCH_CHECK(status_ == CUBLAS_STATUS_SUCCESS, #expr " failed with status ", (int)status_); \
    } while (0)

struct BlasHandle {
    static cublasHandle_t handle;
    static cublasHandle_t get() {
        if (handle == nullptr) CUBLAS_CHECK(cublasCreate(&handle));
        return handle;
    }
};
cublasHandle_t BlasHandle::handle = nullptr;

static torch::Tensor linear_nobias_forward(torch::Tensor x, torch::Tensor w) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && x.is_contiguous() && w.is_contiguous(), "contiguous CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && w.scalar_type() == torch::kFloat32, "float32 only");
    const int64_t m = x.size(0), k = x.size(1), n = w.size(0);
    TORCH_CHECK(w.size(1) == k, "shape mismatch");
    auto y = torch::empty({m, n}, x.options());
    cublasHandle_t h = BlasHandle::get();
    CUBLAS_CHECK(cublasSetStream(h, c10::cuda::getCurrentCUDAStream().stream()));
    const float alpha = 1.f, beta = 0.f;
    // Row-major y (m, n) = x (m, k) * w^T is column-major y^T (n, m) = w (n, k as col-major k x n)^T * x^T.
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, w.data_ptr<float>(), (int)k,
                             x.data_ptr<float>(), (int)k, &beta, y.data_ptr<float>(), (int)n));
    return y;
}

static void register_linear_nobias(pybind11::module& m) {
    m.def("linear_nobias_forward", &linear_nobias_forward, py::arg("x"), py::arg("w"));
}
REGISTER_BINDING(linear_nobias, register_linear_nobias);
