// binding.cpp -- fixed infrastructure of a cuda-agent workspace. Do not edit:
// the judge builds every submission against its own clean copy of this file.
// It defines the `cuda_extension` Python module and applies every REGISTER_BINDING from kernels/.
#include "binding_registry.h"

PYBIND11_MODULE(cuda_extension, m) {
    m.doc() = "Custom CUDA kernels of a cuda-agent submission";
    cuda_agent::apply_bindings(m);
}
