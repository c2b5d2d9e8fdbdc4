// gemm_bias_relu_binding.cpp -- Python entry point: relu(x @ weight^T + bias).
// cuBLAS SGEMM (kernels/gemm.cpp) writes x @ weight^T into a freshly allocated output, then the fused
// epilogue kernel (kernels/bias_relu.cu) adds the bias and applies ReLU in place.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <limits>

#include "../binding_registry.h"

cublasStatus_t linear_gemm_f32(const float* x, const float* w, float* y, int64_t M, int64_t N, int64_t K,
                               cudaStream_t stream);
extern "C" void launch_bias_relu(float* y, const float* bias, int64_t M, int64_t N, cudaStream_t stream);

torch::Tensor gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda(), "all inputs must be CUDA tensors");
        TORCH_CHECK(t->scalar_type() == torch::kFloat32, "all inputs must be float32");
        TORCH_CHECK(t->is_contiguous(), "all inputs must be contiguous");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1, "expected x (M, K), weight (N, K), bias (N)");
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    TORCH_CHECK(weight.size(1) == K && bias.size(0) == N, "shape mismatch between x, weight and bias");
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    TORCH_CHECK(M <= kIntMax && N <= kIntMax && K <= kIntMax, "dimensions too large for cuBLAS");
    const c10::cuda::CUDAGuard guard(x.device());

    torch::Tensor y = torch::empty({M, N}, x.options());
    if (M == 0 || N == 0) return y;
    TORCH_CHECK(K > 0, "K must be positive");
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();

    const cublasStatus_t status =
        linear_gemm_f32(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(), M, N, K, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed with status ", static_cast<int>(status));
    launch_bias_relu(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_relu kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_gemm_bias_relu(pybind11::module& m) {
    m.def("gemm_bias_relu_forward", &gemm_bias_relu_forward, "relu(x @ weight^T + bias) via cuBLAS + epilogue",
          py::arg("x"), py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(gemm_bias_relu, register_gemm_bias_relu);
