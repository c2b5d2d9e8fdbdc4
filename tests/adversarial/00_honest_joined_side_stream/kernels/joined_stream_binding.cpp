// joined_stream_binding.cpp -- the fused elementwise chain launched on a private stream that is properly
// joined to torch's current stream in both directions: the private stream first waits for the current
// stream (so the input is ready), and the current stream then waits for the private stream (so anything
// the caller does next, including a timing event, comes after the kernel). Nothing escapes the caller's
// stream order; a judge must accept this (it is how libraries overlap independent work).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);

namespace {

struct Side {
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr, done = nullptr;
};

Side& side() {
    static Side s = [] {
        Side v;
        TORCH_CHECK(cudaStreamCreateWithFlags(&v.stream, cudaStreamNonBlocking) == cudaSuccess, "stream create");
        TORCH_CHECK(cudaEventCreateWithFlags(&v.ready, cudaEventDisableTiming) == cudaSuccess, "event create");
        TORCH_CHECK(cudaEventCreateWithFlags(&v.done, cudaEventDisableTiming) == cudaSuccess, "event create");
        return v;
    }();
    return s;
}

}  // namespace

torch::Tensor joined_chain_forward(torch::Tensor x, double scale, double shift, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    cudaStream_t current = c10::cuda::getCurrentCUDAStream().stream();
    Side& s = side();
    TORCH_CHECK(cudaEventRecord(s.ready, current) == cudaSuccess, "event record");
    TORCH_CHECK(cudaStreamWaitEvent(s.stream, s.ready, 0) == cudaSuccess, "stream wait");
    launch_ew_chain(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale),
                    static_cast<float>(shift), static_cast<float>(lo), static_cast<float>(hi), 0, s.stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "ew_chain launch failed: ", cudaGetErrorString(err));
    TORCH_CHECK(cudaEventRecord(s.done, s.stream) == cudaSuccess, "event record");
    TORCH_CHECK(cudaStreamWaitEvent(current, s.done, 0) == cudaSuccess, "stream wait");
    return y;
}

static void register_joined(pybind11::module& m) {
    m.def("joined_chain_forward", &joined_chain_forward, "the chain on a private stream joined to the current one",
          py::arg("x"), py::arg("scale"), py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(joined_stream, register_joined);
