"""The infix printer where PyTensor users look for it: ``ffigraph.pp``, ``ffigraph.pprint``,
``ffigraph.printing.pp``/``pprint``."""
import ffigraph
import ffigraph.tensor as T
from ffigraph import printing, pretty


def test_pp_paths():
    assert ffigraph.pp is ffigraph.pprint is printing.pp is printing.pprint is pretty.pp
    assert {"pp", "pprint"} <= set(ffigraph.__all__) and {"pp", "pprint"} <= set(printing.__all__)
    x, y = T.dscalar("x"), T.dscalar("y")
    assert ffigraph.pp(x * y) == "(x * y)"
