"""Theano's misc.pkl_utils: dump writes a zip of the pickle and each array as a .npy member (read
back here with numpy itself); load gives the same objects, shared variables and graphs included."""
import io
import pickle
import zipfile
from functools import partial

import numpy as np
import pytest

import ffigraph
import ffigraph.tensor as T
from ffigraph.graph import graph_inputs
from ffigraph.misc.pkl_utils import PersistentSharedVariableID, StripPickler, dump, load


def test_round_trip_of_a_model():
    rng = np.random.default_rng(0)
    W = ffigraph.shared(rng.standard_normal((3, 2)), "W")
    b = ffigraph.shared(np.zeros(2, np.float32), "b")
    other = ffigraph.shared(np.arange(4), "W")        # a second "W": its member is W_2
    x = T.dmatrix("x")
    y = T.dot(x, W) + b
    arrays = {"empty": np.zeros((0, 3)), "zero_d": np.array(2.5), "ints": np.arange(5, dtype=np.int16)}
    buffer = io.BytesIO()
    dump({"W": W, "b": b, "other": other, "y": y, "arrays": arrays, "same": [W, W]}, buffer)
    buffer.seek(0)
    with zipfile.ZipFile(buffer) as archive:
        names = sorted(archive.namelist())
        assert names == sorted(["W.npy", "b.npy", "W_2.npy", "array_0.npy", "array_1.npy", "array_2.npy", "pkl"])
        with archive.open("W.npy") as member:    # plain numpy files
            np.testing.assert_array_equal(np.load(io.BytesIO(member.read())), W.get_value())
    buffer.seek(0)
    back = load(buffer)
    np.testing.assert_array_equal(back["W"].get_value(), W.get_value())
    assert back["b"].get_value().dtype == np.float32 and back["other"].get_value().tolist() == [0, 1, 2, 3]
    assert back["same"][0] is back["same"][1] is back["W"]
    for key, value in arrays.items():
        assert back["arrays"][key].dtype == value.dtype and back["arrays"][key].shape == value.shape
        np.testing.assert_array_equal(back["arrays"][key], value)
    # the graph reads the loaded shared variables: a new value reaches the function
    x_back = [v for v in graph_inputs([back["y"]]) if v.name == "x"][0]
    f = ffigraph.function([x_back], back["y"])
    np.testing.assert_allclose(f(np.ones((1, 3))), np.ones((1, 3)) @ W.get_value(), rtol=1e-15)
    back["W"].set_value(np.zeros((3, 2)))
    np.testing.assert_array_equal(f(np.ones((1, 3))), np.zeros((1, 2)))


def test_options_and_errors(tmp_path):
    unnamed = ffigraph.shared(np.ones(2))
    with pytest.raises(ValueError, match="no name"):
        dump(unnamed, io.BytesIO(), persistent_id=partial(PersistentSharedVariableID, allow_unnamed=False))
    a, b = ffigraph.shared(np.ones(1), "s"), ffigraph.shared(np.ones(1), "s")
    with pytest.raises(ValueError, match="two shared variables"):
        dump([a, b], io.BytesIO(), persistent_id=partial(PersistentSharedVariableID, allow_duplicates=False))
    path = tmp_path / "model.zip"
    with open(path, "wb") as f:
        dump(unnamed, f)
    with open(path, "rb") as f:
        np.testing.assert_array_equal(load(f).get_value(), [1.0, 1.0])
    not_ours = io.BytesIO()
    with zipfile.ZipFile(not_ours, "w") as archive:
        archive.writestr("other", b"")
    not_ours.seek(0)
    with pytest.raises(ValueError, match="no 'pkl' member"):
        load(not_ours)
    # StripPickler drops the traces (stack frames) of the variables it pickles
    x = T.dvector("x")
    x.tag.trace = [("file.py", 1, "f", "x = ...")]
    out = io.BytesIO()
    StripPickler(out).dump(x * 2)
    assert not hasattr(pickle.loads(out.getvalue()).owner.inputs[0].tag, "trace")
