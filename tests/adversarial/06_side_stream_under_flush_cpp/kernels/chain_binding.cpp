// chain_binding.cpp -- CHEAT (family 6, work hidden under the judge's own flush, C++ side): the fused
// kernel runs on a stream from PyTorch's pool that does NOT wait for the caller's stream (the inputs are
// ready: the judge drew them before the round), and the caller's stream waits for it at the end, so the
// output and the end event are honest. The judge queued its L2 flush on the caller's stream just before
// the start event; the pool stream is free to run at once, so the kernel overlaps the flush and is mostly
// done before the start event fires on the GPU. Only a pre-start pad that occupies every SM stops it.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);

namespace {

cudaEvent_t done_event() {
    static cudaEvent_t e = [] {
        cudaEvent_t v = nullptr;
        cudaEventCreateWithFlags(&v, cudaEventDisableTiming);
        return v;
    }();
    return e;
}

}  // namespace

torch::Tensor chain_forward(torch::Tensor x, double scale, double shift, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, x.device().index());
    // No wait for the caller's stream: the kernel may start while the judge's flush still runs.
    launch_ew_chain(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale),
                    static_cast<float>(shift), static_cast<float>(lo), static_cast<float>(hi), 0, side.stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    cudaEventRecord(done_event(), side.stream());
    cudaStreamWaitEvent(c10::cuda::getCurrentCUDAStream().stream(), done_event(), 0);  // joined back
    return y;
}

static void register_chain(pybind11::module& m) {
    m.def("chain_forward", &chain_forward, "clamp(gelu(x * scale + shift), lo, hi)", py::arg("x"), py::arg("scale"),
          py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(chain, register_chain);
