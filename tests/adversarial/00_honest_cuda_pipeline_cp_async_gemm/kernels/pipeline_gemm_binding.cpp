#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" void pipeline_gemm_launcher(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream);

static torch::Tensor pipeline_gemm_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.is_contiguous() && b.is_contiguous(), "contiguous CUDA tensors");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 only");
    const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
    TORCH_CHECK(b.size(0) == K && M % 64 == 0 && N % 64 == 0 && K % 16 == 0, "shapes: M, N multiples of 64, K of 16");
    auto c = torch::empty({M, N}, a.options());
    pipeline_gemm_launcher(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), (int)M, (int)N, (int)K,
                           c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "gemm launch failed: ", cudaGetErrorString(err));
    return c;
}

static void register_pipeline_gemm(pybind11::module& m) {
    m.def("pipeline_gemm_forward", &pipeline_gemm_forward, py::arg("a"), py::arg("b"));
}
REGISTER_BINDING(pipeline_gemm, register_pipeline_gemm);
