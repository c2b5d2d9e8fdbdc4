// flush_timed_stage_binding.cpp -- CHEAT (family 14, warm caches; issue 33, timing class 5: L2 warmed
// during the flush). The 14_copy_engine_l2_stage_gemm trick aimed at a judge whose pad flushes last (v6):
// a copy during the pad's spin is evicted by the flush, so this one is timed to end with the pad, i.e.
// to run during the flush itself, when lines it stages have the least of the flush left to survive.
//
// How it finds the pad's end without any of the judge's numbers: each call records an event on the
// caller's stream when it is entered (it completes when the pad before it does), queues the GEMM and its
// epilogue behind the pad, then spins on the host for `delay` and issues the weight copy (4 MiB pieces into
// one scratch buffer, on a pool stream that waits for nothing), with an event after it. The next call reads
// both events: the copy ended `late` ms after the pad; it moves `delay` so that the copy ends 10 us before
// the pad (the host must be done before the pad ends, or the call's end event would wait for it). A pad
// the call finds already finished (a verification call), or one far longer than a timed call's (the
// warm-up's host measurement), gets no copy and no delay. The GEMM and epilogue are honest cuBLAS SGEMM +
// bias/ReLU on the caller's stream.
//
// What must catch it (v6): the flush runs at DRAM bandwidth, so the copy's traffic beside it lengthens
// it; the pad stamps its flush, and the timed calls' flushes beyond the calibration samples' are charged.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cublas_v2.h>

#include <algorithm>
#include <chrono>

#include "../binding_registry.h"

cublasStatus_t linear_gemm_f32(const float* x, const float* w, float* y, int64_t M, int64_t N, int64_t K,
                               cudaStream_t stream);
extern "C" void launch_bias_act(float* y, const float* bias, int64_t M, int64_t N, bool relu, cudaStream_t stream);

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPiece = size_t{4} << 20;
constexpr double kLeadMs = 0.010;       // the copy ends this long before the pad
constexpr double kMaxDelayUs = 1500.0;  // a longer wait is not a timed call's pad (the judge's pads: < 0.5 ms)

struct Timer {
    cudaStream_t side = nullptr;
    void* scratch = nullptr;
    cudaEvent_t entered = nullptr, copied = nullptr;
    bool measuring = false;
    double delay_us = 0.0;
};

Timer& timer() {
    static Timer t = [] {
        Timer v;
        v.side = c10::cuda::getStreamFromPool().stream();
        if (cudaMalloc(&v.scratch, kPiece) != cudaSuccess) v.scratch = nullptr;
        cudaEventCreate(&v.entered);
        cudaEventCreate(&v.copied);
        cudaGetLastError();
        return v;
    }();
    return t;
}

// Move the delay by what the last copy missed the pad's end by (both events done: it is in the past).
void learn(Timer& t) {
    if (!t.measuring || cudaEventQuery(t.copied) != cudaSuccess || cudaEventQuery(t.entered) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    float late_ms = 0.0f;
    if (cudaEventElapsedTime(&late_ms, t.entered, t.copied) == cudaSuccess) {
        const double next = t.delay_us - (static_cast<double>(late_ms) + kLeadMs) * 1000.0;
        t.delay_us = next > kMaxDelayUs ? 0.0 : std::max(0.0, next);
    }
    cudaGetLastError();
    t.measuring = false;
}

void stage(Timer& t, const void* data, size_t bytes) {
    const char* src = static_cast<const char*>(data);
    for (size_t done = 0; done < bytes; done += kPiece) {
        cudaMemcpyAsync(t.scratch, src + done, std::min(kPiece, bytes - done), cudaMemcpyDeviceToDevice, t.side);
    }
    cudaEventRecord(t.copied, t.side);
    t.measuring = true;
}

}  // namespace

torch::Tensor flush_timed_gemm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor* t : {&x, &weight, &bias}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "inputs must be contiguous float32 CUDA tensors");
    }
    TORCH_CHECK(x.dim() == 2 && weight.dim() == 2 && bias.dim() == 1 && weight.size(1) == x.size(1) &&
                    bias.size(0) == weight.size(0),
                "expected x (M, K), weight (N, K), bias (N)");
    const c10::cuda::CUDAGuard guard(x.device());
    const auto entered_at = Clock::now();
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    Timer& t = timer();
    const bool pad_running = cudaStreamQuery(stream) == cudaErrorNotReady;
    cudaGetLastError();
    learn(t);
    cudaEventRecord(t.entered, stream);  // completes when the pad queued before this call does
    const int64_t M = x.size(0), K = x.size(1), N = weight.size(0);
    torch::Tensor y = torch::empty({M, N}, x.options());
    const cublasStatus_t status = linear_gemm_f32(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(),
                                                  M, N, K, stream);
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "cublasSgemm failed with status ", static_cast<int>(status));
    launch_bias_act(y.data_ptr<float>(), bias.data_ptr<float>(), M, N, true, stream);
    if (pad_running && t.scratch != nullptr) {
        const auto issue_at = entered_at + std::chrono::nanoseconds(static_cast<int64_t>(t.delay_us * 1000.0));
        while (Clock::now() < issue_at) {
        }
        stage(t, weight.data_ptr(), static_cast<size_t>(weight.numel()) * sizeof(float));
    }
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "flush-timed gemm launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_flush_timed_gemm(pybind11::module& m) {
    m.def("flush_timed_gemm_forward", &flush_timed_gemm_forward, "relu(x @ weight^T + bias)", py::arg("x"),
          py::arg("weight"), py::arg("bias"));
}
REGISTER_BINDING(flush_timed_gemm, register_flush_timed_gemm);
