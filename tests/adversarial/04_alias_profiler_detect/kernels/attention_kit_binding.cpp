// attention_kit_binding.cpp -- attention_forward(q, k, v): softmax(q k^T / sqrt(64)) v with the simple
// own kernel of attention_kit.cu, for contiguous (B, H, S, 64) fp16 CUDA tensors.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" void launch_naive_attention(const void* q, const void* k, const void* v, void* o, int64_t batch_heads,
                                       int64_t seq, float scale, cudaStream_t stream);

namespace {

torch::Tensor attention_forward(torch::Tensor q, torch::Tensor k, torch::Tensor v) {
    TORCH_CHECK(q.is_cuda() && q.scalar_type() == torch::kFloat16 && q.dim() == 4 && q.size(3) == 64,
                "q, k, v: (B, H, S, 64) fp16 CUDA tensors");
    TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous() && k.sizes() == q.sizes() &&
                v.sizes() == q.sizes(), "q, k, v: contiguous, of one shape");
    const c10::cuda::CUDAGuard guard(q.device());
    torch::Tensor out = torch::empty_like(q);
    launch_naive_attention(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), q.size(0) * q.size(1), q.size(2),
                           0.125f, c10::cuda::getCurrentCUDAStream().stream());
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "attention launch failed: ", cudaGetErrorString(err));
    return out;
}

}  // namespace

static void register_attention_kit(pybind11::module& m) {
    m.def("attention_forward", &attention_forward, "softmax(q k^T / 8) v", py::arg("q"), py::arg("k"), py::arg("v"));
}
REGISTER_BINDING(attention_kit, register_attention_kit);
