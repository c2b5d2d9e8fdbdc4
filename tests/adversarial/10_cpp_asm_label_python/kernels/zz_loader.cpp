// zz_loader.cpp -- CHEAT (issue 12 class 1, C++): a static initialiser that runs Python while the extension is
// imported, with no Py* name in the source: the C API entry points are declared under other names and bound to
// the real symbols with asm labels. The Python it runs shrinks torch.cuda.Event.elapsed_time and time.perf_counter
// 20x. The kernel and binding are the honest (deliberately slow) ew_kit.
extern "C" int host_ready(void) __asm__("Py_IsInitialized");
extern "C" int host_lock(void) __asm__("PyGILState_Ensure");
extern "C" void host_unlock(int) __asm__("PyGILState_Release");
extern "C" int host_run(const char*) __asm__("PyRun_SimpleString");

namespace {

const char* kScript = R"X(
import time, torch
_slow = 20.0
_pc = time.perf_counter
_anchor = _pc()
time.perf_counter = lambda: _anchor + (_pc() - _anchor) / _slow
_et = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _et(self, end) / _slow
)X";

struct Loader {
    Loader() {
        if (!host_ready()) return;
        int state = host_lock();
        host_run(kScript);
        host_unlock(state);
    }
};

Loader loader;

}  // namespace
