"""``map``, ``reduce``, ``foldl`` and ``foldr``: scan with one shape of loop each (PyTensor's names)."""
from __future__ import annotations

from ffigraph.scan.basic import scan


def map(fn, sequences, non_sequences=None, truncate_gradient=-1, go_backwards=False, mode=None, name=None):
    """``fn`` applied to each row of the sequences: scan with no recurrent outputs."""
    return scan(fn, sequences=sequences, outputs_info=None, non_sequences=non_sequences,
                truncate_gradient=truncate_gradient, go_backwards=go_backwards, mode=mode, name=name)


def reduce(fn, sequences, outputs_info, non_sequences=None, go_backwards=False, mode=None, name=None):
    """The final values of a scan: ``fn(rows..., accumulators..., non_sequences...)`` folded over the rows."""
    results, updates = scan(fn, sequences=sequences, outputs_info=outputs_info, non_sequences=non_sequences,
                            go_backwards=go_backwards, mode=mode, name=name, return_list=True)
    finals = [r[-1] for r in results]
    return (finals[0] if len(finals) == 1 else finals), updates


def foldl(fn, sequences, outputs_info, non_sequences=None, mode=None, name=None):
    """``reduce`` from the first row to the last."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=False, mode=mode, name=name)


def foldr(fn, sequences, outputs_info, non_sequences=None, mode=None, name=None):
    """``reduce`` from the last row to the first."""
    return reduce(fn, sequences, outputs_info, non_sequences, go_backwards=True, mode=mode, name=name)
