#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void cdist_norms(const float* x, const float* y, float* xn, float* yn, int m, int n, int d, cudaStream_t s);
extern "C" void cdist_epilogue(float* dist, const float* xn, const float* yn, int m, int n, cudaStream_t s);

static cublasHandle_t blas() {
    static cublasHandle_t h = [] {
        cublasHandle_t made = nullptr;
        TORCH_CHECK(cublasCreate(&made) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
        return made;
    }();
    return h;
}

static torch::Tensor cdist_forward(torch::Tensor x, torch::Tensor y) {
    for (const auto& t : {x, y})
        TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.dim() == 2 && t.scalar_type() == torch::kFloat32, "2-D float32 CUDA");
    const int64_t m = x.size(0), n = y.size(0), d = x.size(1);
    TORCH_CHECK(y.size(1) == d, "feature dims differ");
    auto dist = torch::empty({m, n}, x.options());
    auto xn = torch::empty({m}, x.options());
    auto yn = torch::empty({n}, x.options());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cdist_norms(x.data_ptr<float>(), y.data_ptr<float>(), xn.data_ptr<float>(), yn.data_ptr<float>(), (int)m, (int)n, (int)d, stream);
    cublasHandle_t h = blas();
    TORCH_CHECK(cublasSetStream(h, stream) == CUBLAS_STATUS_SUCCESS, "cublasSetStream failed");
    const float one = 1.f, zero = 0.f;
    // Row-major dot (m x n) = x y^T: column-major dot^T (n x m) = y x^T -> gemm(T, N), A = y, B = x.
    TORCH_CHECK(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)d, &one, y.data_ptr<float>(), (int)d, x.data_ptr<float>(),
                            (int)d, &zero, dist.data_ptr<float>(), (int)n) == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed");
    cdist_epilogue(dist.data_ptr<float>(), xn.data_ptr<float>(), yn.data_ptr<float>(), (int)m, (int)n, stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "cdist kernels failed: ", cudaGetErrorString(err));
    return dist;
}

static void register_cdist(pybind11::module& m) { m.def("cdist_forward", &cdist_forward, py::arg("x"), py::arg("y")); }
REGISTER_BINDING(cdist, register_cdist);
