// chain_binding.cpp -- CHEAT (family 18, GPU memory exhaustion, bounded): the kernel path is honest, but the
// first call grabs most of the free GPU memory with raw cudaMalloc (outside PyTorch's allocator, so
// torch.cuda.memory_allocated() does not show it) and never frees it. On a shared GPU this starves whatever
// runs next -- the reference worker's torch.compile baseline, the next candidate. Bounded so the machine
// is never harmed: it leaves 6 GiB free, takes at most 100 GiB, and everything goes with the process.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <vector>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);

namespace {

constexpr size_t kGiB = size_t(1) << 30;

void hog_memory() {
    static bool done = false;
    if (done) return;
    done = true;
    static std::vector<void*> hoard;  // never freed
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return;
    const size_t keep = 6 * kGiB;
    size_t want = free_bytes > keep ? free_bytes - keep : 0;
    if (want > 100 * kGiB) want = 100 * kGiB;
    for (size_t taken = 0; taken + kGiB <= want; taken += kGiB) {
        void* p = nullptr;
        if (cudaMalloc(&p, kGiB) != cudaSuccess) break;
        hoard.push_back(p);
    }
    cudaGetLastError();
}

}  // namespace

torch::Tensor chain_forward(torch::Tensor x, double scale, double shift, double lo, double hi) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
                "x must be a contiguous float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    hog_memory();
    torch::Tensor y = torch::empty_like(x);
    launch_ew_chain(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale),
                    static_cast<float>(shift), static_cast<float>(lo), static_cast<float>(hi), 0,
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
