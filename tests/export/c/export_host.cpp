// A C++ host: includes the export's headers as C++ and links the library.
// Loads the shared vector from its .npy file, runs the seed export on a 2x4 input,
// and checks both outputs. Prints "ok" on success.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "seed.h"
#include "ffg_npy.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s BUNDLE_DIR\n", argv[0]);
        return 2;
    }
    FfgError err;
    seed_handle *h = seed_open(nullptr, &err);
    FfgNpyArray s;
    std::string path = std::string(argv[1]) + "/s.npy";
    if (h == nullptr || ffg_npy_read(path.c_str(), &s, &err) != FFG_OK
        || seed_set_shared(h, seed_shared_index("s"), &s.tensor, &err) != FFG_OK) {
        std::fprintf(stderr, "setup failed: %s\n", err.message);
        return 1;
    }
    std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<int64_t> shape = {2, 4};
    FfgTensor in = FfgTensor();
    in.data = x.data();
    in.device.device_type = FFG_DEVICE_CPU;
    in.ndim = 2;
    in.dtype.code = FFG_DTYPE_FLOAT;
    in.dtype.bits = 64;
    in.dtype.lanes = 1;
    in.shape = shape.data();
    FfgOutput out[SEED_N_OUTPUTS] = {};
    if (seed_run(h, &in, SEED_N_INPUTS, out, SEED_N_OUTPUTS, &err) != FFG_OK) {
        std::fprintf(stderr, "run failed: %s\n", err.message);
        return 1;
    }
    const double *twice = static_cast<const double *>(out[SEED_OUTPUT_out0].tensor.data);
    const double *total = static_cast<const double *>(out[SEED_OUTPUT_out1].tensor.data);
    const double *sv = static_cast<const double *>(s.data);
    int wrong = 0;
    for (int k = 0; k < 8; ++k)
        wrong += twice[k] != 2 * x[k];
    for (int k = 0; k < 4; ++k)
        wrong += total[k] != x[k] + x[k + 4] + sv[k];
    for (auto &o : out)
        seed_release(h, &o);
    ffg_npy_free(&s);
    seed_close(h);
    std::printf(wrong ? "wrong %d\n" : "ok\n", wrong);
    return wrong ? 1 : 0;
}
