// host.cpp -- a C++ host of the export "seed": RAII over its handle, an output handed on as DLPack.
//   cd seed_export && make && g++ -std=c++17 -I . path/to/host.cpp ffg_dlpack.o -L . -lseed
//   -Wl,-rpath,'$ORIGIN' -o host_cpp && ./host_cpp
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ffg_dlpack.h"
#include "seed.h"

namespace {

// seed_close(handle) when the owner goes out of scope, on every path (exceptions included).
struct CloseHandle {
    void operator()(seed_handle *h) const { seed_close(h); }
};
using Handle = std::unique_ptr<seed_handle, CloseHandle>;

// A DLPack tensor is given back by calling its deleter exactly once.
struct CallDeleter {
    void operator()(FfgDLManagedTensorVersioned *t) const {
        if (t->deleter)
            t->deleter(t);
    }
};
using DLPackTensor = std::unique_ptr<FfgDLManagedTensorVersioned, CallDeleter>;

void check(int32_t code, const FfgError &err, const char *what)
{
    if (code != FFG_OK)
        throw std::runtime_error(std::string(what) + ": " + err.message);
}

// A float64 FfgTensor over a std::vector (C order: strides NULL). Borrowed, never written.
FfgTensor float64_tensor(std::vector<double> &data, std::vector<int64_t> &shape)
{
    FfgTensor t = {data.data(), {FFG_DEVICE_CPU, 0}, static_cast<int32_t>(shape.size()),
                   {FFG_DTYPE_FLOAT, 64, 1}, shape.data(), nullptr, 0};
    return t;
}

void print_vector(const char *label, const FfgTensor &t)
{
    const double *data = static_cast<const double *>(t.data);
    int64_t step = t.strides ? t.strides[0] : 1;
    std::printf("%s:", label);
    for (int64_t i = 0; i < t.shape[0]; ++i)
        std::printf(" %g", data[i * step]);
    std::printf("\n");
}

}  // namespace

int main()
{
    try {
        FfgError err;
        Handle h(seed_open(nullptr, &err));   // nullptr: outputs come from malloc, go back with free
        if (!h)
            throw std::runtime_error(std::string("seed_open: ") + err.message);

        // the shared variable s lives in the handle: start it at zero
        std::vector<double> s(4, 0.0);
        std::vector<int64_t> s_shape{4};
        FfgTensor s_value = float64_tensor(s, s_shape);
        check(seed_set_shared(h.get(), seed_shared_index("s"), &s_value, &err), err, "seed_set_shared");

        std::vector<double> x(12);
        for (int i = 0; i < 12; ++i)
            x[i] = i;
        std::vector<int64_t> x_shape{3, 4};
        FfgTensor input = float64_tensor(x, x_shape);

        for (int step = 1; step <= 3; ++step) {
            FfgOutput out[SEED_N_OUTPUTS] = {};   // no blocks offered: the library allocates
            check(seed_run(h.get(), &input, SEED_N_INPUTS, out, SEED_N_OUTPUTS, &err), err, "seed_run");
            seed_release(h.get(), &out[SEED_OUTPUT_out0]);   // not kept
            // output 1 becomes a DLPack tensor of its own: its deleter frees the block
            FfgDLManagedTensorVersioned *wrapped = nullptr;
            check(ffg_dlpack_wrap_output(&out[SEED_OUTPUT_out1], nullptr, nullptr, 0, &wrapped, &err), err,
                  "ffg_dlpack_wrap_output");
            DLPackTensor total(wrapped);
            std::printf("step %d ", step);
            print_vector("total", total->dl_tensor);
        }

        FfgTensor current;   // lent by the handle until its next call
        check(seed_get_shared(h.get(), seed_shared_index("s"), &current, &err), err, "seed_get_shared");
        print_vector("s in the handle", current);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    return 0;
}
