#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void bilinear_reduce_launcher(const float* t, const float* x2, const float* bias, float* y, int B, int out, int in2,
                                         cudaStream_t stream);

static cublasHandle_t blas() {
    static cublasHandle_t h = [] {
        cublasHandle_t made = nullptr;
        TORCH_CHECK(cublasCreate(&made) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
        return made;
    }();
    return h;
}

static torch::Tensor bilinear_forward(torch::Tensor x1, torch::Tensor x2, torch::Tensor w, torch::Tensor bias) {
    for (const auto& t : {x1, x2, w, bias})
        TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kFloat32, "contiguous float32 CUDA tensors");
    const int64_t B = x1.size(0), in1 = x1.size(1), in2 = x2.size(1), out = w.size(0);
    TORCH_CHECK(w.size(1) == in1 && w.size(2) == in2 && bias.numel() == out, "shape mismatch");
    auto t = torch::empty({out, B, in2}, x1.options());
    auto y = torch::empty({B, out}, x1.options());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    cublasHandle_t h = blas();
    TORCH_CHECK(cublasSetStream(h, stream) == CUBLAS_STATUS_SUCCESS, "cublasSetStream failed");
    const float one = 1.f, zero = 0.f;
    // Row-major t[o] (B x in2) = x1 (B x in1) W[o] (in1 x in2): column-major t[o]^T = W[o]^T x1^T -> gemm(N, N), A = W[o], B = x1.
    TORCH_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)in2, (int)B, (int)in1, &one, w.data_ptr<float>(),
                                          (int)in2, in1 * in2, x1.data_ptr<float>(), (int)in1, 0, &zero, t.data_ptr<float>(),
                                          (int)in2, B * in2, (int)out) == CUBLAS_STATUS_SUCCESS, "bilinear gemm failed");
    bilinear_reduce_launcher(t.data_ptr<float>(), x2.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), (int)B, (int)out,
                             (int)in2, stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bilinear reduce launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_bilinear(pybind11::module& m) {
    m.def("bilinear_forward", &bilinear_forward, py::arg("x1"), py::arg("x2"), py::arg("w"), py::arg("bias"));
}
REGISTER_BINDING(bilinear, register_bilinear);
