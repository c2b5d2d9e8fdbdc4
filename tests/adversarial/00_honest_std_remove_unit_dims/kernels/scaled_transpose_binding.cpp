#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>
#include "../binding_registry.h"

extern "C" void scaled_transpose_launcher(const float* x, float* y, int batch, int rows, int cols, float scale,
                                          cudaStream_t stream);

static torch::Tensor scaled_transpose_forward(torch::Tensor x, double scale) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == torch::kFloat32 && x.dim() >= 2,
                "x: contiguous float32 CUDA tensor with at least 2 dims");
    const auto sizes = x.sizes().vec();
    const int64_t rows = sizes[sizes.size() - 2], cols = sizes.back();
    // Leading dims: size-1 dims carry no data, so drop them before folding the rest into one batch count.
    std::vector<int64_t> lead(sizes.begin(), sizes.end() - 2);
    lead.erase(std::remove(lead.begin(), lead.end(), int64_t{1}), lead.end());
    const int64_t batch = std::accumulate(lead.begin(), lead.end(), int64_t{1}, std::multiplies<int64_t>());
    std::vector<int64_t> out_sizes(sizes.begin(), sizes.end() - 2);
    out_sizes.push_back(cols);
    out_sizes.push_back(rows);
    auto y = torch::empty(out_sizes, x.options());
    scaled_transpose_launcher(x.data_ptr<float>(), y.data_ptr<float>(), (int)batch, (int)rows, (int)cols, (float)scale,
                              c10::cuda::getCurrentCUDAStream().stream());
    auto err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "transpose launch failed: ", cudaGetErrorString(err));
    return y;
}

static void register_scaled_transpose(pybind11::module& m) {
    m.def("scaled_transpose_forward", &scaled_transpose_forward, py::arg("x"), py::arg("scale"));
}
REGISTER_BINDING(scaled_transpose, register_scaled_transpose);
