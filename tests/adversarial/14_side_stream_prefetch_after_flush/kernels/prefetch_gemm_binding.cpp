// prefetch_gemm_binding.cpp -- CHEAT (family 14, warm caches; issue 33, timing class 5: L2 warmed after the
// flush, on SMs). Before queuing an honest SGEMM (cuBLAS on torch's handle) + bias/ReLU epilogue on the
// caller's stream, the call launches a kernel that prefetches the 16 MiB weight into L2 on a pool stream
// that waits for nothing. Nothing of it can run while the judge's pad fills every SM; it starts the moment
// SMs come free. A pad that flushes last (protocol v6) frees them block by block as its flush blocks
// finish, so the prefetch runs in the flush's last microseconds and the call may find its weight warm;
// a pad that ends at one deadline for every block (v5) starts it together with the call, where it only
// competes. Nothing waits for it and nothing reads what it touches. What must catch it: its DRAM traffic
// lengthens the flush, which the pad stamps and the round is charged; a prefetch still running after the
// call's end event is in the device-wide tail.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cublas_v2.h>

#include "../binding_registry.h"

cublasStatus_t linear_gemm_f32(const float* x, const float* w, float* y, int64_t M, int64_t N, int64_t K,
                               cudaStream_t stream);
extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);
extern "C" void launch_l2_prefetch(const void* data, int64_t bytes, int blocks, cudaStream_t stream);

namespace {

constexpr int kPrefetchBlocks = 16;

cudaStream_t prefetch_stream() {
    static cudaStream_t s = c10::cuda::getStreamFromPool().stream();
    return s;
}

}  // namespace

torch::Tensor prefetch_gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1 && weight.size(1) == x.size(1) &&
                    bias.size(0) == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    launch_l2_prefetch(weight.data_ptr(), weight.numel() * static_cast<int64_t>(sizeof(float)), kPrefetchBlocks,
                       prefetch_stream());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    torch::Tensor y = torch::empty({M, N}, x.options());
    const cublasStatus_t status = linear_gemm_f32(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(),
                                                  M, N, K, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed with status ", static_cast<int>(status));
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, true, stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "prefetch gemm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_prefetch_gemm(pybind11::module& m) {
    m.def("prefetch_gemm_bias_relu_forward", &prefetch_gemm_bias_relu_forward, "relu(x @ weight^T + bias)",
          py::arg("x"), py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(prefetch_gemm, register_prefetch_gemm);
