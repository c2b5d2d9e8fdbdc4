// rmsnorm_binding.cpp -- Python entry point of the RMSNorm kernel (kernels/rmsnorm.cu), its work marked with
// NVTX ranges: "rmsnorm_forward" around the whole call, "rmsnorm_rows launch" around the launch. NVTX v3 is
// header-only; the markers cost a few nanoseconds when no tool listens and name the range in a profile.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <nvtx3/nvToolsExt.h>

#include "../binding_registry.h"

extern "C" void launch_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int cols, float eps,
                               cudaStream_t stream);

namespace {

// Pops the range on every way out of the function, exceptions included.
struct NvtxRange {
    explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
    ~NvtxRange() { nvtxRangePop(); }
    NvtxRange(const NvtxRange&) = delete;
    NvtxRange& operator=(const NvtxRange&) = delete;
};

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps) {
    NvtxRange call("rmsnorm_forward");
    for (const torch::Tensor* t : {&x, &weight}) {
        TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat32 && t->is_contiguous(),
                    "x and weight must be contiguous float32 CUDA tensors");
    }
    const int64_t cols = x.size(-1);
    TORCH_CHECK(cols > 0 && cols % 4 == 0 && cols <= 8192 && weight.numel() == cols,
                "rows of up to 8192 floats, a multiple of 4, and a weight of that length");
    const c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor y = torch::empty_like(x);
    {
        NvtxRange launch("rmsnorm_rows launch");
        launch_rmsnorm(x.data_ptr<float>(), weight.data_ptr<float>(), y.data_ptr<float>(), x.numel() / cols,
                       static_cast<int>(cols), static_cast<float>(eps), c10::cuda::getCurrentCUDAStream().stream());
    }
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "rmsnorm launch failed: ", cudaGetErrorString(err));
    return y;
}

}  // namespace

static void register_rmsnorm(pybind11::module& m) {
    m.def("rmsnorm_forward", &rmsnorm_forward, "RMSNorm over the last dim with a weight", py::arg("x"),
          py::arg("weight"), py::arg("eps"));
}
REGISTER_BINDING(rmsnorm, register_rmsnorm);
