// gemm_bias_relu_binding.cpp -- CHEAT (family 14, warm caches): an honest SGEMM + bias/ReLU epilogue, but
// the weight matrix -- the same 32 MiB on every call, and what this skinny GEMM's time is made of -- is
// marked *persisting* in L2: the device's persisting set-aside is raised to its maximum
// (cudaLimitPersistingL2CacheSize) and the stream doing the work carries an access-policy window over the
// weight (hitProp = persisting). Persisting lines are not evicted by ordinary traffic, so a judge that
// "flushes" L2 by writing a big buffer between calls leaves the weight in L2, and every call skips its
// HBM read. The work runs on a private stream (access-policy windows cannot be set on the legacy default
// stream) that is joined to the caller's stream both ways, so timing events stay honest otherwise.
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

struct Persist {
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr, done = nullptr;
    size_t max_persist = 0, max_window = 0;
    const void* window_base = nullptr;
};

Persist& persist(int device) {
    static Persist p = [device] {
        Persist v;
        int persist_bytes = 0, window_bytes = 0;
        cudaDeviceGetAttribute(&persist_bytes, cudaDevAttrMaxPersistingL2CacheSize, device);
        cudaDeviceGetAttribute(&window_bytes, cudaDevAttrMaxAccessPolicyWindowSize, device);
        v.max_persist = static_cast<size_t>(persist_bytes);
        v.max_window = static_cast<size_t>(window_bytes);
        if (v.max_persist > 0) cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, v.max_persist);
        cudaStreamCreateWithFlags(&v.stream, cudaStreamNonBlocking);
        cudaEventCreateWithFlags(&v.ready, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&v.done, cudaEventDisableTiming);
        cudaGetLastError();  // a device without persistence support just runs without it
        return v;
    }();
    return p;
}

void pin_in_l2(Persist& p, const void* base, size_t bytes) {
    if (p.max_persist == 0 || p.max_window == 0 || base == p.window_base) return;
    cudaStreamAttrValue attr{};
    attr.accessPolicyWindow.base_ptr = const_cast<void*>(base);
    attr.accessPolicyWindow.num_bytes = std::min(bytes, p.max_window);
    attr.accessPolicyWindow.hitRatio =
        std::min(1.0f, static_cast<float>(p.max_persist) / static_cast<float>(attr.accessPolicyWindow.num_bytes));
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    if (cudaStreamSetAttribute(p.stream, cudaStreamAttributeAccessPolicyWindow, &attr) == cudaSuccess) {
        p.window_base = base;
    }
    cudaGetLastError();
}

}  // namespace

torch::Tensor gemm_bias_relu_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1 && weight.size(1) == x.size(1) &&
                    bias.size(0) == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    torch::Tensor y = torch::empty({M, N}, x.options());
    cudaStream_t current = c10::cuda::getCurrentCUDAStream().stream();
    Persist& p = persist(x.get_device());
    pin_in_l2(p, weight.data_ptr(), static_cast<size_t>(weight.numel()) * sizeof(float));
    TORCH_CHECK(cudaEventRecord(p.ready, current) == cudaSuccess, "event record");
    TORCH_CHECK(cudaStreamWaitEvent(p.stream, p.ready, 0) == cudaSuccess, "stream wait");
    const cublasStatus_t status = linear_gemm_f32(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(),
                                                  M, N, K, p.stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed with status ", static_cast<int>(status));
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, true, p.stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "bias_act launch failed: ", cudaGetErrorString(err));
    TORCH_CHECK(cudaEventRecord(p.done, p.stream) == cudaSuccess, "event record");
    TORCH_CHECK(cudaStreamWaitEvent(current, p.done, 0) == cudaSuccess, "stream wait");
    return y;
}

static void register_gemm_bias_relu(pybind11::module& m) {
    m.def("gemm_bias_relu_forward", &gemm_bias_relu_forward, "relu(x @ weight^T + bias)", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(gemm_bias_relu, register_gemm_bias_relu);
