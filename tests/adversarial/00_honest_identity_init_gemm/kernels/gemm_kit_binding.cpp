// gemm_kit_binding.cpp -- Linear layers from a cuBLAS SGEMM (kernels/gemm.cpp) and a fused bias (+ ReLU)
// epilogue kernel (kernels/bias_act.cu):
//   gemm_bias_relu_forward(x, w, b) = relu(x @ w^T + b)
//   linear_forward(x, w, b)         = x @ w^T + b
//   bias_relu_(y, b)                : y = relu(y + b) in place
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
extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);

namespace {

void check_f32(const torch::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(), name,
                " must be a contiguous float32 CUDA tensor");
}

torch::Tensor linear_impl(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, bool relu) {
    check_f32(x, "x");
    check_f32(weight, "weight");
    check_f32(bias, "bias");
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1, "expected x (M, K), weight (N, K), bias (N)");
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    TORCH_CHECK(weight.size(1) == K && bias.size(0) == N, "shape mismatch between x, weight and bias");
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    TORCH_CHECK(M <= kIntMax && N <= kIntMax && K <= kIntMax && K > 0, "bad GEMM dimensions");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty({M, N}, x.options());
    if (M == 0 || N == 0) return y;
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const cublasStatus_t status =
        linear_gemm_f32(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(), M, N, K, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed with status ", static_cast<int>(status));
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, relu, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias epilogue launch failed: ", cudaGetErrorString(err));
    return y;
}

torch::Tensor gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    return linear_impl(x, weight, bias, true);
}

torch::Tensor linear_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    return linear_impl(x, weight, bias, false);
}

void bias_relu_(torch::Tensor y, torch::Tensor bias) {
    check_f32(y, "y");
    check_f32(bias, "bias");
    TORCH_CHECK(y.dim() == 2 && bias.dim() == 1 && bias.size(0) == y.size(1), "expected y (M, N) and bias (N)");
    const c10::cuda::CUDAGuard guard(y.device());
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), y.size(0), y.size(1), true,
                    c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_relu launch failed: ", cudaGetErrorString(err));
}

}  // namespace

static void register_gemm_kit(pybind11::module& m) {
    m.def("gemm_bias_relu_forward", &gemm_bias_relu_forward, "relu(x @ weight^T + bias)", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
    m.def("linear_forward", &linear_forward, "x @ weight^T + bias", py::arg("x"), py::arg("weight"), py::arg("bias"));
    m.def("bias_relu_", &bias_relu_, "y = relu(y + bias) in place", py::arg("y"), py::arg("bias"));
}
REGISTER_BINDING(gemm_kit, register_gemm_kit);
