// ew_kit_binding.cpp -- entry points of the elementwise toolkit: the fused chain (fast or deliberately
// slow), the chain into a given output, a copy, and a GPU spin. Everything launches on torch's current
// stream and checks the launch.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_ew_chain(const float* x, float* y, int64_t n, float scale, float shift, float lo, float hi,
                                int64_t max_blocks, cudaStream_t stream);
extern "C" void launch_copy(const float* src, float* dst, int64_t n, cudaStream_t stream);
extern "C" void launch_spin(uint64_t ns, int blocks, cudaStream_t stream);

namespace {

constexpr int64_t kSlowBlocks = 8;

void check_f32(const torch::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(), name,
                " must be a contiguous float32 CUDA tensor");
}

void check_launch(const char* what) {
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, what, " launch failed: ", cudaGetErrorString(err));
}

void ew_into(torch::Tensor x, torch::Tensor y, double scale, double shift, double lo, double hi, bool slow) {
    check_f32(x, "x");
    check_f32(y, "y");
    TORCH_CHECK(x.numel() == y.numel(), "x and y must have the same number of elements");
    const c10::cuda::CUDAGuard guard(x.device());
    launch_ew_chain(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(scale),
                    static_cast<float>(shift), static_cast<float>(lo), static_cast<float>(hi),
                    slow ? kSlowBlocks : 0, c10::cuda::getCurrentCUDAStream().stream());
    check_launch("ew_chain");
}

torch::Tensor ew_forward(torch::Tensor x, double scale, double shift, double lo, double hi, bool slow) {
    check_f32(x, "x");
    torch::Tensor y = torch::empty_like(x);
    ew_into(x, y, scale, shift, lo, hi, slow);
    return y;
}

void copy_into(torch::Tensor src, torch::Tensor dst) {
    check_f32(src, "src");
    check_f32(dst, "dst");
    TORCH_CHECK(src.numel() == dst.numel(), "src and dst must have the same number of elements");
    const c10::cuda::CUDAGuard guard(src.device());
    launch_copy(src.data_ptr<float>(), dst.data_ptr<float>(), src.numel(), c10::cuda::getCurrentCUDAStream().stream());
    check_launch("copy");
}

void gpu_spin(int64_t ns, int64_t blocks) {
    launch_spin(static_cast<uint64_t>(ns), static_cast<int>(blocks), c10::cuda::getCurrentCUDAStream().stream());
    check_launch("spin");
}

}  // namespace

static void register_ew_kit(pybind11::module& m) {
    m.def("ew_forward", &ew_forward, "clamp(gelu(x * scale + shift), lo, hi)", py::arg("x"), py::arg("scale"),
          py::arg("shift"), py::arg("lo"), py::arg("hi"), py::arg("slow") = false);
    m.def("ew_into", &ew_into, "the chain of x written into y", py::arg("x"), py::arg("y"), py::arg("scale"),
          py::arg("shift"), py::arg("lo"), py::arg("hi"), py::arg("slow") = false);
    m.def("copy_into", &copy_into, "dst[:] = src[:] (float32)", py::arg("src"), py::arg("dst"));
    m.def("gpu_spin", &gpu_spin, "a kernel that spins for ns nanoseconds on the current stream", py::arg("ns"),
          py::arg("blocks") = 1);
}
REGISTER_BINDING(ew_kit, register_ew_kit);
