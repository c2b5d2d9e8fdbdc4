// cached_chain_binding.cpp -- CHEAT (family 4): chain_forward(x, ...) allocates y and runs the device-side
// content cache of kernels/device_cache.cu. The stored outputs live in one raw cudaMalloc buffer of 8 slots
// (not a torch tensor, so nothing of it shows in torch's allocator), sized on the first call.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" int device_cache_slots();
extern "C" void launch_cached_chain(const float* x, float* y, float* stash, int64_t n, float scale, float shift,
                                    float lo, float hi, cudaStream_t stream);

torch::Tensor chain_forward(torch::Tensor x, double scale, double shift, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    static float* stash = nullptr;
    static int64_t stash_elems = 0;
    if (stash == nullptr || stash_elems != x.numel()) {
        if (stash != nullptr) cudaFree(stash);
        stash_elems = x.numel();
        TORCH_CHECK(cudaMalloc(&stash, static_cast<size_t>(stash_elems) * device_cache_slots() * sizeof(float)) ==
                        cudaSuccess, "cudaMalloc failed");
    }
    torch::Tensor y = torch::empty_like(x);
    launch_cached_chain(x.data_ptr<float>(), y.data_ptr<float>(), stash, x.numel(), static_cast<float>(scale),
                        static_cast<float>(shift), static_cast<float>(lo), static_cast<float>(hi),
                        c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_chain(pybind11::module& m) {
    m.def("chain_forward", &chain_forward, "clamp(gelu(x * scale + shift), lo, hi)", py::arg("x"), py::arg("scale"),
          py::arg("shift"), py::arg("lo"), py::arg("hi"));
}
REGISTER_BINDING(chain, register_chain);
