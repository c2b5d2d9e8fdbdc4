#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include <cmath>
#include "../binding_registry.h"

extern "C" void softmax_inplace_launcher(float* s, int64_t rows, int cols, cudaStream_t stream);

static cublasHandle_t blas() {
    static cublasHandle_t h = [] {
        cublasHandle_t made = nullptr;
        TORCH_CHECK(cublasCreate(&made) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
        return made;
    }();
    return h;
}

static torch::Tensor attention_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    for (const auto& t : {q, k, v})
        TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.dim() == 4 && t.scalar_type() == torch::kFloat32 && t.sizes() == q.sizes(),
                    "q, k, v: contiguous (B, H, S, D) float32 of one shape");
    const int64_t batch = q.size(0) * q.size(1), S = q.size(2), D = q.size(3);
    auto scores = torch::empty({batch, S, S}, q.options());
    auto out = torch::empty_like(q);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cublasHandle_t h = blas();
    TORCH_CHECK(cublasSetStream(h, stream) == CUBLAS_STATUS_SUCCESS, "cublasSetStream failed");
    const float scale = 1.f / std::sqrt((float)D), zero = 0.f, one = 1.f;
    // Row-major scores (S x S) = q (S x D) k^T: column-major scores^T = k q^T -> gemm(T, N) with A = k, B = q.
    TORCH_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)S, (int)S, (int)D, &scale, k.data_ptr<float>(), (int)D,
                                          S * D, q.data_ptr<float>(), (int)D, S * D, &zero, scores.data_ptr<float>(), (int)S,
                                          S * S, (int)batch) == CUBLAS_STATUS_SUCCESS, "scores gemm failed");
    softmax_inplace_launcher(scores.data_ptr<float>(), batch * S, (int)S, stream);
    // Row-major out (S x D) = p (S x S) v (S x D): column-major out^T = v^T p^T -> gemm(N, N) with A = v, B = p.
    TORCH_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)D, (int)S, (int)S, &one, v.data_ptr<float>(), (int)D,
                                          S * D, scores.data_ptr<float>(), (int)S, S * S, &zero, out.data_ptr<float>(), (int)D,
                                          S * D, (int)batch) == CUBLAS_STATUS_SUCCESS, "output gemm failed");
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "softmax launch failed: ", cudaGetErrorString(err));
    return out;
}

static void register_attention(pybind11::module& m) {
    m.def("attention_forward", &attention_forward, py::arg("q"), py::arg("k"), py::arg("v"));
}
REGISTER_BINDING(attention, register_attention);
