#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

static cublasHandle_t blas() {
    static cublasHandle_t h = [] {
        cublasHandle_t made = nullptr;
        TORCH_CHECK(cublasCreate(&made) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
        return made;
    }();
    return h;
}

static torch::Tensor addr_forward(torch::Tensor a, torch::Tensor x, torch::Tensor y) {
    for (const auto& t : {a, x, y})
        TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kFloat32, "contiguous float32 CUDA tensors");
    const int64_t m = a.size(0), n = a.size(1);
    TORCH_CHECK(x.numel() == m && y.numel() == n, "shape mismatch");
    auto out = torch::empty_like(a);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cudaError_t err = cudaMemcpyAsync(out.data_ptr<float>(), a.data_ptr<float>(), a.numel() * sizeof(float),
                                      cudaMemcpyDeviceToDevice, stream);
    TORCH_CHECK(err == cudaSuccess, "copy failed: ", cudaGetErrorString(err));
    cublasHandle_t h = blas();
    TORCH_CHECK(cublasSetStream(h, stream) == CUBLAS_STATUS_SUCCESS, "cublasSetStream failed");
    const float one = 1.f;
    // Row-major out (m x n) is column-major out^T (n x m): out^T += y x^T.
    TORCH_CHECK(cublasSger(h, (int)n, (int)m, &one, y.data_ptr<float>(), 1, x.data_ptr<float>(), 1, out.data_ptr<float>(), (int)n) ==
                    CUBLAS_STATUS_SUCCESS, "cublasSger failed");
    return out;
}

static void register_addr(pybind11::module& m) {
    m.def("addr_forward", &addr_forward, py::arg("a"), py::arg("x"), py::arg("y"));
}
REGISTER_BINDING(addr, register_addr);
