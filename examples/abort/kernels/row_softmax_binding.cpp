// row_softmax_binding.cpp -- ABORTS ON PURPOSE (SIGABRT) on the first call.
// A hand-rolled CHECK_OR_DIE macro has its condition inverted: it calls std::abort() when the checked
// condition HOLDS, so the first valid input kills the process. The kernel is the honest one.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdio>
#include <cstdlib>

#include "../binding_registry.h"

// BUG: should be `if (!(cond))`.
#define CHECK_OR_DIE(cond, msg)                                   \
    do {                                                          \
        if (cond) {                                               \
            std::fprintf(stderr, "row_softmax: fatal: %s\n", msg); \
            std::abort();                                         \
        }                                                         \
    } while (0)

extern "C" void launch_row_softmax(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream);

torch::Tensor row_softmax_forward(torch::Tensor x) {
    CHECK_OR_DIE(x.dim() == 2, "x must be 2-D (rows, cols)");
    CHECK_OR_DIE(x.is_cuda(), "x must be a CUDA tensor");
    CHECK_OR_DIE(x.scalar_type() == torch::kFloat32, "x must be float32");
    CHECK_OR_DIE(x.is_contiguous(), "x must be contiguous");
    const c10::cuda::CUDAGuard guard(x.device());

    torch::Tensor y = torch::empty_like(x);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_row_softmax(x.data_ptr<float>(), y.data_ptr<float>(), x.size(0), x.size(1), stream);
    cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "row_softmax kernel launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_row_softmax(pybind11::module& m) {
    m.def("row_softmax_forward", &row_softmax_forward, "softmax over the last dim of a 2-D float32 tensor",
          py::arg("x"));
}
REGISTER_BINDING(row_softmax, register_row_softmax);
