// binding_registry.h -- fixed infrastructure of a cuda-agent workspace. Do not edit:
// the judge builds every submission against its own clean copy of this file.
//
// Each kernels/*_binding.cpp registers a function that adds its Python entry points to the
// `cuda_extension` module:
//
//     static void register_my_op(pybind11::module& m) { m.def("my_op_forward", &my_op_forward); }
//     REGISTER_BINDING(my_op, register_my_op);
//
// Registration runs from static initialisers, before PYBIND11_MODULE in binding.cpp applies them.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace cuda_agent {

using BindingFn = std::function<void(pybind11::module&)>;

// A function-local static avoids the static-initialisation-order problem between translation units.
inline std::vector<std::pair<std::string, BindingFn>>& binding_table() {
    static std::vector<std::pair<std::string, BindingFn>> table;
    return table;
}

struct BindingRegistrar {
    BindingRegistrar(const char* name, BindingFn fn) { binding_table().emplace_back(name, std::move(fn)); }
};

inline void apply_bindings(pybind11::module& m) {
    for (auto& entry : binding_table()) entry.second(m);
}

}  // namespace cuda_agent

// Kept for sources written against the original CUDA-Agent workspace.
struct BindingRegistry {
    static BindingRegistry& getInstance() {
        static BindingRegistry instance;
        return instance;
    }
    void applyBindings(pybind11::module& m) { cuda_agent::apply_bindings(m); }
};

#define REGISTER_BINDING(name, fn) \
    static ::cuda_agent::BindingRegistrar cuda_agent_registrar_##name(#name, [](pybind11::module& m) { fn(m); })
