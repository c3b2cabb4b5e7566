"""Small pieces of the scan package: the ``until`` condition and the description of a loop."""
from __future__ import annotations

from collections import namedtuple

from ffigraph.tensor import as_tensor_variable


class until:
    """Returned by a step function (beside its outputs) to stop the loop early.

    ``scan`` stops after the first step whose condition is true; that step's
    outputs are kept, so the outputs have as many rows as steps were run.
    """

    def __init__(self, condition):
        condition = as_tensor_variable(condition)
        if condition.ndim != 0:
            raise TypeError("until: the condition must be a scalar, got %s with %d dimensions"
                            % (condition, condition.ndim))
        self.condition = condition

    def __repr__(self):
        return "until(%s)" % (self.condition,)


# What a Scan node loops over. Outer inputs: [n_steps, *sequences, *initial states, *non-sequences];
# outer outputs: [*recurrent outputs, *nit-sot outputs]. Inner inputs, in order: one slice per
# (sequence, tap), one previous value per (recurrent output, tap), then the non-sequences; inner
# outputs: each recurrent output's new value, each nit-sot value, then the until condition (as_while).
#   seq_taps:  per sequence, its taps (ascending; a tap k reads row t + k - min(taps) at step t)
#              of the array the node loops over: scan() cuts the user's sequence to the rows its
#              steps read and, for go_backwards, reverses it and negates the taps (basic.py)
#   rec_taps:  per recurrent output, its taps (ascending, all negative); its initial state has
#              -min(taps) rows, for times min(taps) .. -1
#   rec_last:  per recurrent output, True when only its final value is returned (shared-variable
#              updates, gradient accumulators) instead of its trace of n_steps rows; such an output
#              has the one tap -1
#   n_nit_sot: outputs with no initial state and no taps, returned as a trace of n_steps rows
#   n_non_seqs: inputs passed unchanged to every step
#   as_while:  the last inner output is an ``until`` condition
#   truncate_gradient: backpropagate through at most this many steps (-1: all)
ScanInfo = namedtuple("ScanInfo", "seq_taps rec_taps rec_last n_nit_sot n_non_seqs as_while truncate_gradient")


def info_counts(info):
    """(inner inputs for the sequences, inner inputs for the recurrent outputs)."""
    return sum(len(t) for t in info.seq_taps), sum(len(t) for t in info.rec_taps)
