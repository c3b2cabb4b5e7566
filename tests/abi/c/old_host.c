/*
 * old_host.c -- a host built against ABI 1.3's ffigraph_abi.h (tests/abi/c/v1/), as hosts written
 * before ABI 2 were. Given a library of ABI 2 and its symbol prefix, it does what ABI 1 said a
 * host does, and reports what the library answered:
 *   - P_version() and P_describe()->abi_version: 1.x's life cycle refuses any other major;
 *   - a host that skipped that check: P_create(NULL, &err) and P_create(&allocator, &err), the two
 *     ways ABI 1 created a state, must both be refused with FFG_ERR_ABI and a message naming the
 *     ABI, read from the error record, whose layout ABI 2 kept for this very reason.
 * usage: old_host LIBRARY PREFIX; exit 0 when every refusal came as described, else 1.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffigraph_abi.h"   /* ABI 1.3's */

static void *my_alloc(void *ctx, size_t n) { (void)ctx; return malloc(n); }
static void my_release(void *ctx, void *p) { (void)ctx; free(p); }

static void *entry(void *lib, const char *prefix, const char *name)
{
    char symbol[256];
    snprintf(symbol, sizeof symbol, "%s_%s", prefix, name);
    return dlsym(lib, symbol);
}

int main(int argc, char **argv)
{
    void *lib;
    ffg_version_fn *version;
    ffg_create_fn *create;
    FfgAllocator allocator = {my_alloc, my_release, NULL};
    FfgError err;
    void *state;
    int ok = 1;

    if (argc != 3)
        return 1;
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return 1;
    version = (ffg_version_fn *)entry(lib, argv[2], "version");
    create = (ffg_create_fn *)entry(lib, argv[2], "create");
    if (version == NULL || create == NULL)
        return 1;
    printf("host ABI %d, library ABI %u\n", FFG_ABI_VERSION, (unsigned)version());
    if (version() / 1000 == FFG_ABI_VERSION / 1000) {
        printf("the library claims this host's major\n");
        ok = 0;
    }
    memset(&err, 0, sizeof err);
    state = create(NULL, &err);
    printf("create(NULL): state %s, code %d, message: %s\n", state ? "made" : "NULL", (int)err.code, err.message);
    if (state != NULL || err.code != FFG_ERR_ABI || strstr(err.message, "ABI") == NULL)
        ok = 0;
    memset(&err, 0, sizeof err);
    state = create(&allocator, &err);
    printf("create(&allocator): state %s, code %d, message: %s\n", state ? "made" : "NULL", (int)err.code,
           err.message);
    if (state != NULL || err.code != FFG_ERR_ABI || strstr(err.message, "ABI") == NULL)
        ok = 0;
    dlclose(lib);
    printf(ok ? "refused\n" : "NOT refused\n");
    return ok ? 0 : 1;
}
