// stage_gemm_binding.cpp -- CHEAT (family 14, warm caches; issue 33, timing class 5: L2 warmed after the
// flush). An honest SGEMM (cuBLAS on torch's handle) + bias/ReLU epilogue on the caller's stream, but first
// the call copies its weight -- 16 MiB, the same on every call, and what this skinny GEMM's time is made of
// -- in 4 MiB pieces into one scratch buffer, with cudaMemcpyAsync on a pool stream that waits for nothing.
// The copy engines run it at once: while the judge's pad still occupies every SM. The copy's reads bring
// the weight into L2, so a judge that flushes L2 at the start of its pad and then spins (protocol v5) hands
// the call a warm weight: the issue measured +3 at 1.8x where the honest kernel gets at most +1.
// The flush must come last, right before the call's start event (v6): then the staged lines are evicted.
// Nothing waits for the copy and nothing reads the scratch: it is a prefetch, and harmless to the output.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cublas_v2.h>

#include <algorithm>

#include "../binding_registry.h"

cublasStatus_t linear_gemm_f32(const float* x, const float* w, float* y, int64_t M, int64_t N, int64_t K,
                               cudaStream_t stream);
extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);

namespace {

constexpr size_t kPiece = size_t{4} << 20;

struct Stager {
    cudaStream_t side = nullptr;
    void* scratch = nullptr;
};

Stager& stager() {
    static Stager s = [] {
        Stager v;
        v.side = c10::cuda::getStreamFromPool().stream();  // a stream of its own; no event ever joins it
        if (cudaMalloc(&v.scratch, kPiece) != cudaSuccess) v.scratch = nullptr;
        cudaGetLastError();
        return v;
    }();
    return s;
}

void stage_into_l2(const void* data, size_t bytes) {
    Stager& s = stager();
    if (s.scratch == nullptr) return;
    const char* src = static_cast<const char*>(data);
    for (size_t done = 0; done < bytes; done += kPiece) {
        cudaMemcpyAsync(s.scratch, src + done, std::min(kPiece, bytes - done), cudaMemcpyDeviceToDevice, s.side);
    }
}

}  // namespace

torch::Tensor staged_gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1 && weight.size(1) == x.size(1) &&
                    bias.size(0) == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    stage_into_l2(weight.data_ptr(), static_cast<size_t>(weight.numel()) * sizeof(float));
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    torch::Tensor y = torch::empty({M, N}, x.options());
    const cublasStatus_t status = linear_gemm_f32(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(),
                                                  M, N, K, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed with status ", static_cast<int>(status));
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, true, stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "staged gemm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_staged_gemm(pybind11::module& m) {
    m.def("staged_gemm_bias_relu_forward", &staged_gemm_bias_relu_forward, "relu(x @ weight^T + bias)",
          py::arg("x"), py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(staged_gemm, register_staged_gemm);
