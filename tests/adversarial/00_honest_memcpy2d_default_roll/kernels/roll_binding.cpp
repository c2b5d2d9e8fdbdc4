// roll_binding.cpp -- out = torch.roll(x, -shift, dims=1) for a contiguous 2-D float32 tensor, as two
// pitched copies. cudaMemcpyDefault lets the runtime take the direction from the pointers (both device
// memory here: the copies run on the GPU, on the current stream).
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

static torch::Tensor roll_columns_forward(torch::Tensor x, int64_t shift) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t rows = x.size(0), cols = x.size(1);
    torch::Tensor out = torch::empty_like(x);
    if (x.numel() == 0) return out;
    const int64_t s = ((shift % cols) + cols) % cols;  // out[:, j] = x[:, (j + s) % cols]
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const size_t pitch = static_cast<size_t>(cols) * sizeof(float);
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    cudaError_t err = cudaSuccess;
    if (cols - s > 0)  // out[:, :cols - s] = x[:, s:]
        err = cudaMemcpy2DAsync(dst, pitch, src + s, pitch, (cols - s) * sizeof(float), rows, cudaMemcpyDefault,
                                stream);
    TORCH_CHECK(err == cudaSuccess, "first copy failed: ", cudaGetErrorString(err));
    if (s > 0)  // out[:, cols - s:] = x[:, :s]
        err = cudaMemcpy2DAsync(dst + (cols - s), pitch, src, pitch, s * sizeof(float), rows, cudaMemcpyDefault,
                                stream);
    TORCH_CHECK(err == cudaSuccess, "second copy failed: ", cudaGetErrorString(err));
    return out;
}

static void register_roll(pybind11::module& m) {
    m.def("roll_columns_forward", &roll_columns_forward, "torch.roll(x, -shift, dims=1) of a 2-D float32 tensor",
          py::arg("x"), py::arg("shift"));
}
REGISTER_BINDING(roll_columns, register_roll);
