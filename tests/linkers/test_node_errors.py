"""An error from a node names that node as the function's graph numbers it, under every linker.

``c|py`` builds each node as a one-node library, whose error record says "node #0": the linker
that sequences them must name the node by its index in the function's graph, and the one-node
library's own line must not stand in the message beside it (found by a C host's tests, issue
"Nothing crashes, nothing lies").
"""
import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.compile.mode import Mode


@pytest.mark.parametrize("linker", ["c", "c|py", "cvm"])
def test_a_failing_scan_body_is_named_by_its_index_in_the_graph(linker):
    xs, W = T.dmatrix("xs"), T.dmatrix("W")
    first = T.exp(W).sum()   # nodes before the scan: it is not node #0
    ys, _ = ffigraph.scan(lambda x_t, W: T.dot(x_t, W), sequences=[xs], non_sequences=[W])
    f = ffigraph.function([xs, W], [first, ys.sum()], mode=Mode(linker=linker))
    np.testing.assert_allclose(f(np.ones((3, 4)), np.ones((4, 2)))[1], 24.0, rtol=1e-15)
    with pytest.raises(ValueError) as info:
        f(np.ones((3, 4)), np.ones((5, 2)))
    err = info.value
    order = f.maker.fgraph.toposort()
    position = err.failed_node_index
    assert type(err.failed_node.op).__name__ == "Scan"
    text = str(err)
    assert "Apply node that caused the error: #%d Scan{" % position in text
    assert "in node #0" not in text or position == 0
    assert "Gemv(xs[t], W)" in text   # the body's node (a vector.matrix Dot: Gemv), as the record says it
    assert position > 0 and len(order) > 1
