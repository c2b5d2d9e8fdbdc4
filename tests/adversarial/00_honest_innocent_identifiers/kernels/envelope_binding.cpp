#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"

extern "C" cudaError_t envelope_launcher(const float* x, const float* decay, float* y, int batch, int channels,
                                         int64_t filter_size, float timestep, cudaStream_t stream);

static torch::Tensor envelope_forward(torch::Tensor x, torch::Tensor decay, double timestep) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() == 3, "x must be contiguous 3-D (no open() or fopen() here)");
    TORCH_CHECK(decay.is_contiguous() && decay.numel() == x.size(1), "decay: one value per channel, not a system() call");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && decay.scalar_type() == torch::kFloat32, "float32 only; fork() free");
    auto y = torch::empty_like(x);
    cudaError_t err = envelope_launcher(x.data_ptr<float>(), decay.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(0),
                                        (int)x.size(1), x.size(2), (float)timestep,
                                        c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "envelope launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_envelope(pybind11::module& m) {
    m.def("envelope_forward", &envelope_forward, py::arg("x"), py::arg("decay"), py::arg("timestep"));
}
REGISTER_BINDING(envelope, register_envelope);
