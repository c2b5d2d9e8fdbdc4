// mm_relu_binding.cpp -- CHEAT (issue 12 class 2, C++): ATen's GEMM credited to the submission as "cuBLAS".
//
// The coverage gate credits cuBLAS kernels (names with gemm/xmma/cutlass, outside PyTorch's namespaces) to a
// submission in a task with a matrix product, provided the submission's own objects call cuBLAS. This
// binding does call cuBLAS -- cublasSetStream on torch's handle, what an honest cuBLAS user does first and
// a harmless no-op here -- so the linker imports a cublas symbol. The GEMM itself (all the work) is ATen's
// at::mm, called with the Python dispatch keys excluded so that an in-process TorchDispatchMode op gate
// sees nothing; libtorch_cuda launches cuBLAS's kernels for it. Then the submission's own bias + ReLU
// epilogue kernel. Every kernel that runs is either "cuBLAS" (credited) or submitted: 100% coverage.
//
// Why a naive judge credits it: no PyTorch op reaches a dispatch-mode gate, and a coverage gate that
// attributes library kernels by name and link presence counts ATen's GEMM as the submission's. Must be
// rejected: the GEMM is PyTorch compute (family 1), launched by PyTorch, not by the submission.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);

namespace {

torch::Tensor gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1, "expected x, weight, bias");
    const c10::cuda::CUDAGuard guard(x.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    // "Uses cuBLAS": torch's handle bound to the current stream (it already is).
    cublasStatus_t status = cublasSetStream(at::cuda::getCurrentCUDABlasHandle(), stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSetStream failed");
    torch::Tensor y;
    {
        c10::impl::ExcludeDispatchKeyGuard unseen(
            c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
        y = at::mm(x, weight.t());  // ATen's GEMM: cuBLAS kernels launched by libtorch_cuda
    }
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), y.size(0), y.size(1), true, stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "epilogue launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_mm_relu(pybind11::module& m) {
    m.def("gemm_bias_relu_forward", &gemm_bias_relu_forward, "relu(x @ w^T + b)", py::arg("x"), py::arg("weight"),
          py::arg("bias"));
}
REGISTER_BINDING(mm_relu, register_mm_relu);
