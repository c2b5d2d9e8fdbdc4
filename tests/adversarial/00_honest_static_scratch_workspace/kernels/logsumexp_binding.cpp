// logsumexp_binding.cpp -- the partials live in a scratch workspace kept across calls (grown on demand);
// the output is fresh on every call. The workspace is used on one stream at a time: a call on another
// stream than the previous one waits for the previous call's kernels first.
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "../binding_registry.h"

extern "C" int logsumexp_chunks(int64_t cols);
extern "C" void logsumexp_launcher(const float* x, float* partial, float* out, int64_t rows, int64_t cols,
                                   int chunks, cudaStream_t stream);

// The workspace and the event that marks its last use. The tensor is never destroyed (a pointer to it):
// freeing it after the CUDA context at process exit would crash the exit.
static torch::Tensor* const scratch = new torch::Tensor();
static cudaEvent_t scratch_last_use = nullptr;
static cudaStream_t scratch_last_stream = nullptr;

static torch::Tensor logsumexp_rows_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2 && x.is_contiguous(),
                "x must be a contiguous 2-D float32 CUDA tensor");
    TORCH_CHECK(x.size(1) > 0, "logsumexp of empty rows");
    const c10::cuda::CUDAGuard guard(x.device());
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const int64_t rows = x.size(0), cols = x.size(1);
    const int chunks = logsumexp_chunks(cols);
    const int64_t need = 2 * rows * static_cast<int64_t>(chunks);
    if (scratch_last_use == nullptr)
        TORCH_CHECK(cudaEventCreateWithFlags(&scratch_last_use, cudaEventDisableTiming) == cudaSuccess,
                    "cudaEventCreate failed");
    if (scratch_last_stream != nullptr && scratch_last_stream != stream)
        cudaStreamWaitEvent(stream, scratch_last_use, 0);  // the previous call's kernels are done with it
    if (!scratch->defined() || scratch->numel() < need || scratch->device() != x.device())
        *scratch = torch::empty({need}, x.options());
    torch::Tensor out = torch::empty({rows}, x.options());
    logsumexp_launcher(x.data_ptr<float>(), scratch->data_ptr<float>(), out.data_ptr<float>(), rows, cols, chunks,
                       stream);
    const cudaError_t err = cudaGetLastError();
    TORCH_CHECK(err == cudaSuccess, "logsumexp launch failed: ", cudaGetErrorString(err));
    cudaEventRecord(scratch_last_use, stream);
    scratch_last_stream = stream;
    return out;
}

static void register_logsumexp(pybind11::module& m) {
    m.def("logsumexp_rows_forward", &logsumexp_rows_forward, "logsumexp over dim 1 of a 2-D float32 tensor",
          py::arg("x"));
}
REGISTER_BINDING(logsumexp_rows, register_logsumexp);
