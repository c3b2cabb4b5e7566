"""The header of one export: typed prototypes and the map of graph variables to ABI slots."""
from __future__ import annotations

from ffigraph.linkers.c.codegen import comment_text

HEADER_TEMPLATE = r"""/*
 * %(N)s.h -- C interface of the ffigraph export "%(N)s" (generated; do not edit).
 *
 * Life cycle (errors are data: every call returns 0 or an FFG_ERR_* code and fills err):
 *   %(N)s_handle *h = %(N)s_open(NULL, &err);       NULL: err says why
 *   %(N)s_set_shared(h, j, &value, &err);            once per shared variable (copied in)
 *   %(N)s_run(h, inputs, %(NU)s_N_INPUTS, outputs, %(NU)s_N_OUTPUTS, &err);   any number of times
 *   %(N)s_release(h, &outputs[k]);                   for each output, when done with it
 *   %(N)s_close(h);
 *
 * Shared variables live inside the handle. %(N)s_run passes them to the graph after
 * the inputs and, when the call succeeds, replaces them with their updates, so a
 * training step trains from C. %(N)s_get_shared lends the current value (valid until
 * the next call on the handle); %(N)s_set_shared copies a new one in.
 *
 * Outputs: set outputs[k].host_buffer / host_capacity to offer a block, or leave them
 * NULL/0. After a successful run outputs[k].alias_of says where the data lies:
 *   FFG_OUT_OWNED        in outputs[k].base, yours: give it back with %(N)s_release;
 *   FFG_OUT_HOST_BUFFER  in the block you offered;
 *   k' >= 0              inside inputs[k'] (a view; keep that input alive).
 * After a failed run every outputs[k].alias_of is FFG_OUT_NONE: no data, nothing to release.
 * outputs[k].tensor.shape/strides point into the handle: copy them before the next call.
 *
 * Threads: handles are independent; calls on different handles may run at the same
 * time from different threads. A handle serves one call at a time: a second
 * concurrent (or re-entrant) call on the same handle returns FFG_ERR_RUNTIME at once
 * instead of racing. %(N)s_describe, %(N)s_abi_version, %(N)s_shared_index and
 * %(N)s_shared_name may be called from any thread at any time.
 *
%(slot_map)s
 */
#ifndef %(guard)s
#define %(guard)s

#include "ffigraph_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define %(NU)s_N_INPUTS %(n_in)d
#define %(NU)s_N_SHARED %(m)d
#define %(NU)s_N_OUTPUTS %(n_out)d
%(index_macros)s

typedef struct %(N)s_handle %(N)s_handle;

FFG_EXPORT uint32_t %(N)s_abi_version(void);                   /* compare with FFG_ABI_VERSION */
FFG_EXPORT const FfgDescription *%(N)s_describe(void);         /* every slot, shared and update slots included */
FFG_EXPORT %(N)s_handle *%(N)s_open(const FfgAllocator *allocator, FfgError *err);   /* allocator NULL: malloc/free */
FFG_EXPORT void %(N)s_close(%(N)s_handle *h);                  /* NULL is harmless */
FFG_EXPORT int32_t %(N)s_run(%(N)s_handle *h, const FfgTensor *inputs, int32_t n_inputs,
          FfgOutput *outputs, int32_t n_outputs, FfgError *err);
FFG_EXPORT int32_t %(N)s_set_shared(%(N)s_handle *h, int32_t index, const FfgTensor *value, FfgError *err);
FFG_EXPORT int32_t %(N)s_get_shared(%(N)s_handle *h, int32_t index, FfgTensor *view, FfgError *err);
FFG_EXPORT int32_t %(N)s_shared_index(const char *name);       /* -1 when no shared variable has that name */
FFG_EXPORT const char *%(N)s_shared_name(int32_t index);       /* NULL when out of range */
FFG_EXPORT const char *%(N)s_errmsg(const %(N)s_handle *h);    /* the message of the handle's last error */
FFG_EXPORT void %(N)s_release(%(N)s_handle *h, FfgOutput *output);   /* frees an owned output block */

/* The graph's own entry points (shared variables as plain input slots, updates as extra
   output slots, nothing kept between calls); most hosts want the calls above. */
FFG_EXPORT const FfgLibraryApi *%(P)s_library_api(uint32_t abi_major);   /* = ffg_library_api */
FFG_EXPORT ffg_version_fn %(P)s_version;
FFG_EXPORT ffg_describe_fn %(P)s_describe;
FFG_EXPORT ffg_create_fn %(P)s_create;
FFG_EXPORT ffg_run_fn %(P)s_run;
FFG_EXPORT ffg_destroy_fn %(P)s_destroy;
FFG_EXPORT ffg_set_allocator_fn %(P)s_set_allocator;
%(profile_decl)s
#ifdef __cplusplus
}
#endif

#endif /* %(guard)s */
"""


def _shape_text(shape):
    dims = ["?" if s is None else str(s) for s in shape]
    return "(%s)" % (dims[0] + "," if len(dims) == 1 else ", ".join(dims))


def _row(index, label, var_type, extra=""):
    if getattr(var_type, "device", None) == "cuda":
        extra = "  device: cuda" + extra   # a device array: CUDA memory, device {FFG_DEVICE_CUDA, id}
    return " *     %-3d %-24s %-8s ndim %d, shape %s%s" % (
        index, label, var_type.dtype, var_type.ndim, _shape_text(var_type.shape), extra)


def slot_map(plan):
    """The comment block mapping inputs, shared variables, outputs and updates to slots."""
    lines = [" * Slot map (graph variable -> ABI slot):", " *   inputs: %s_run's inputs[k]" % plan.name]
    lines += [_row(k, s.label, s.type, ("  example: %s" % s.file) if s.file else "")
              for k, s in enumerate(plan.inputs)] or [" *     (none)"]
    lines.append(" *   shared variables: kept in the handle, index j of %s_set_shared/get_shared;"
                 " P_run input slot %d + j" % (plan.name, len(plan.inputs)))
    lines += [_row(j, s.label, s.type, "  initial value: %s" % s.file) for j, s in enumerate(plan.shared)] \
        or [" *     (none)"]
    lines.append(" *   outputs: %s_run's outputs[k]" % plan.name)
    lines += [_row(k, s.label, s.type) for k, s in enumerate(plan.outputs)] or [" *     (none)"]
    lines.append(" *   updates: applied inside %s_run after a successful call (P_run output slot %d + j)"
                 % (plan.name, len(plan.outputs)))
    lines += [" *     %-3d shared %d (%s) <- %s" % (j, t, plan.shared[t].label, label)
              for j, (t, label) in enumerate(plan.updates)] or [" *     (none)"]
    return "\n".join(comment_text(line) for line in lines)   # names: escaped, one line each


def _index_macros(plan):
    upper = plan.name.upper()
    lines = []
    for kind, slots in (("INPUT", plan.inputs), ("SHARED", plan.shared), ("OUTPUT", plan.outputs)):
        for k, slot in enumerate(slots):
            if slot.ident:
                lines.append("#define %s_%s_%s %d" % (upper, kind, slot.ident, k))
    return "\n".join(lines)


def header_source(plan):
    """The text of ``<name>.h`` for an export plan (see ffigraph.export.bundle.ExportPlan)."""
    return HEADER_TEMPLATE % dict(
        N=plan.name, NU=plan.name.upper(), P=plan.prefix, guard="FFIGRAPH_EXPORT_%s_H" % plan.name.upper(),
        n_in=len(plan.inputs), m=len(plan.shared), n_out=len(plan.outputs),
        slot_map=slot_map(plan), index_macros=_index_macros(plan),
        profile_decl="FFG_EXPORT ffg_profile_fn %s_profile;   /* generated with profiling on */\n" % plan.prefix
        if getattr(plan, "profiled", False) else "")
