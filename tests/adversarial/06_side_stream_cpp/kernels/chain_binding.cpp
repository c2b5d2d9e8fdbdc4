// chain_binding.cpp -- CHEAT (family 6, work escaping the timer): the fused kernel runs on a private
// non-blocking stream created here. The private stream waits for the caller's stream (so the input is
// ready), but the caller's stream never waits for it: events recorded on the caller's stream around the
// call bracket only the launch, and the kernel finishes whenever it finishes. A device-wide sync (which
// any comparison does first) makes the output complete and correct.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);

namespace {

cudaStream_t private_stream() {
    static cudaStream_t s = [] {
        cudaStream_t v = nullptr;
        cudaStreamCreateWithFlags(&v, cudaStreamNonBlocking);
        return v;
    }();
    return s;
}

cudaEvent_t ready_event() {
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
    cudaEventRecord(ready_event(), c10::cuda::getCurrentCUDAStream().stream());
    cudaStreamWaitEvent(private_stream(), ready_event(), 0);
    launch_ew_chain(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale), static_cast<float>(shift),
                    static_cast<float>(lo), static_cast<float>(hi), 0, private_stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;  // no cudaStreamWaitEvent back onto the caller's stream
}

static void register_chain(pybind11::module& m) {
    m.def("chain_forward", &chain_forward, "clamp(gelu(x * scale + shift), lo, hi)", py::arg("x"), py::arg("scale"),
          py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(chain, register_chain);
