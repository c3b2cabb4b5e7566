"""The C a library gets when it is generated with profiling on (and only then).

With profiling off none of this is emitted: the library has no clock reads, no counters
and no ``P_profile`` symbol, so it costs nothing. With it on, ``run`` times each node
call and itself, and records the shape of every node output after the node succeeds;
``P_profile`` hands the counters to the host through the ABI (``FfgProfile``).
"""
from __future__ import annotations

PROFILE_RUNTIME_C = r"""
/* ---- profiling: a monotonic clock and the last shape of each node output ---- */
#include <time.h>

static int64_t ffg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

static void ffg_profile_array(FfgValueProfile *rec, const ffg_array *a, int ndim, size_t itemsize)
{
    int64_t nbytes;
    int d;
    rec->ndim = ndim;
    for (d = 0; d < ndim; ++d)
        rec->shape[d] = a->shape[d];
    rec->nbytes = ffg_array_nbytes(ndim, a->shape, itemsize, &nbytes) == 0 ? nbytes : -1;
}
"""

STATE_MEMBERS = """\
    int64_t prof_runs;
    int64_t prof_total_ns;
    FfgNodeProfile prof_nodes[%(n_nodes)d];
    FfgValueProfile prof_values[%(n_values)d];"""

PROFILE_FUNCTION = r"""
FFG_EXPORT int32_t %(P)s_profile(void *state_, FfgProfile *out)
{
    %(P)s_state *state = (%(P)s_state *)state_;
    if (state == NULL || out == NULL)
        return FFG_ERR_ABI;
    out->runs = state->prof_runs;
    out->total_ns = state->prof_total_ns;
    out->n_nodes = %(n_nodes)d;
    out->n_values = %(n_values)d;
    out->nodes = state->prof_nodes;
    out->values = state->prof_values;
    return FFG_OK;
}
"""

RUN_START = "const int64_t prof_start = ffg_now_ns();"
RUN_END = """\
    state->prof_runs += 1;
    state->prof_total_ns += ffg_now_ns() - prof_start;"""

TIMED_CALL = """\
{   /* node #%(index)d, timed */
    const int64_t t0 = ffg_now_ns();
    const int32_t rc = %(call)s;
    state->prof_nodes[%(index)d].calls += 1;
    state->prof_nodes[%(index)d].total_ns += ffg_now_ns() - t0;
    if (rc)
        goto __label_nodes_end;
%(records)s
}"""


def value_slots(order):
    """(node index, output index) of every node output, node by node: the FfgValueProfile order."""
    return [(k, o) for k, node in enumerate(order) for o in range(len(node.outputs))]


def create_code(order):
    """Statements for P_create: each value record says which node and output it belongs to."""
    lines = []
    for j, (k, o) in enumerate(value_slots(order)):
        lines.append("state->prof_values[%d].node = %d; state->prof_values[%d].output = %d; "
                     "state->prof_values[%d].ndim = -1;" % (j, k, j, o, j))
    return "\n".join(lines)
