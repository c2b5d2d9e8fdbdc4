#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include "../binding_registry.h"

extern "C" void cluster_rowsum_launcher(const float* x, float* out, int rows, int cols, cudaStream_t stream);

static torch::Tensor cluster_rowsum_forward(const torch::Tensor& x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.dim() == 2 && x.scalar_type() == at::kFloat, "x: 2-D float32");
    const c10::cuda::CUDAGuard guard(x.device());
    auto out = at::empty({x.size(0)}, x.options());
    cluster_rowsum_launcher(x.const_data_ptr<float>(), out.mutable_data_ptr<float>(), (int)x.size(0), (int)x.size(1),
                            c10::cuda::getCurrentCUDAStream().stream());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

static void register_cluster_rowsum(pybind11::module& m) {
    m.def("cluster_rowsum_forward", &cluster_rowsum_forward, py::arg("x"));
}
REGISTER_BINDING(cluster_rowsum, register_cluster_rowsum);
