"""``print(config)`` lists every setting with its doc and current value, as PyTensor's does."""
import ffigraph
from ffigraph.config import _SPEC, config


def test_str_lists_every_key_doc_and_value():
    with config.change_flags(floatX="float32", traceback__limit=3):
        text = str(config)
        for key, (_default, _check, doc) in _SPEC.items():
            assert "%s\n    Doc:  %s\n    Value:  %s\n\n" % (key, doc, getattr(config, key)) in text
        assert "floatX\n    Doc:  dtype of float variables made without an explicit dtype\n    Value:  float32\n" in text
    assert "Value:  float64" in str(config)
    assert text.count("    Doc:  ") == len(_SPEC)
    # describe() keeps its one line per key (cache keys hash it)
    assert config.describe().splitlines()[0].startswith("floatX = ")
    assert ffigraph.config is config
