// burst_ln_binding.cpp -- CHEAT (family 6; issue 33, timing class 4: work moved between the calls of a
// round), on a LayerNorm: the same burst as 06_burst_deferred_marker_elementwise. A call entered with the
// GPU idle or more than 1 ms after the previous one computes at once (verification calls, the first call
// of a timed round), after running anything an earlier burst left queued; a call inside a burst (the judge's
// pad running, the previous call less than 1 ms ago) queues (x, y) and runs a 4 us marker; the call that
// fills the queue runs its nine matrices in one batched launch. Every output is right when the round
// ends; the round's median sample is the marker (protocol v5: +3). Timed by the round's total work over
// its calls (v6), it is the LayerNorm plus its markers.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <chrono>
#include <vector>

#include "../binding_registry.h"
#include "burst_ln.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBurstGap = std::chrono::microseconds(1000);
constexpr uint64_t kMarkerNs = 4000;

struct Queued {
    torch::Tensor x, y;
};

struct LnBurst {
    std::vector<Queued> queue;
    torch::Tensor weight, bias;  // of the queued calls (the module's parameters)
    double eps = 0.0;
    Clock::time_point last{};
};

LnBurst& state() {
    static LnBurst s;
    return s;
}

void check(const torch::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(), name,
                " must be a contiguous float32 CUDA tensor");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, name, " must be 16-byte aligned");
}

void drain(LnBurst& s, cudaStream_t stream) {
    if (s.queue.empty()) return;
    LnBatch batch{};
    for (const Queued& q : s.queue) {
        batch.x[batch.count] = q.x.data_ptr<float>();
        batch.y[batch.count] = q.y.data_ptr<float>();
        ++batch.count;
    }
    const torch::Tensor& x0 = s.queue.front().x;
    launch_ln_batch(batch, s.weight.data_ptr<float>(), s.bias.data_ptr<float>(), static_cast<int>(x0.size(0)),
                    static_cast<int>(x0.size(1)), static_cast<float>(s.eps), stream);
    s.queue.clear();
}

torch::Tensor burst_layernorm_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
    check(x, "x");
    check(weight, "weight");
    check(bias, "bias");
    TORCH_CHECK(x.dim() == 2 && weight.numel() == x.size(1) && bias.numel() == x.size(1),
                "expected x (rows, cols), weight (cols), bias (cols)");
    const c10::cuda::CUDAGuard guard(x.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    LnBurst& s = state();
    const auto now = Clock::now();
    const bool gpu_busy = cudaStreamQuery(stream) == cudaErrorNotReady;
    cudaGetLastError();
    const bool in_burst = gpu_busy && now - s.last < kBurstGap;
    s.last = now;
    const bool same = !s.queue.empty() && s.queue.front().x.sizes() == x.sizes() &&
                      s.weight.data_ptr() == weight.data_ptr() && s.bias.data_ptr() == bias.data_ptr() && s.eps == eps;
    torch::Tensor y = torch::empty_like(x);
    if (!in_burst || (!s.queue.empty() && !same)) {
        drain(s, stream);
        launch_ln_one(x.data_ptr<float>(), y.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(),
                      static_cast<int>(x.size(0)), static_cast<int>(x.size(1)), static_cast<float>(eps), stream);
    } else {
        s.weight = weight;
        s.bias = bias;
        s.eps = eps;
        s.queue.push_back({x, y});
        if (static_cast<int>(s.queue.size()) == kMaxBatch) {
            drain(s, stream);
        } else {
            launch_ln_marker(kMarkerNs, stream);
        }
    }
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "burst_layernorm launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_burst_layernorm(pybind11::module& m) {
    m.def("burst_layernorm_forward", &burst_layernorm_forward, "LayerNorm over rows, deferred in bursts",
          py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("eps"));
}
REGISTER_BINDING(burst_layernorm, register_burst_layernorm);
