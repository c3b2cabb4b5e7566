"""Compiling graphs into callables: ``function``, ``Mode``, ``In``/``Out``, ``shared``."""
from ffigraph.compile.function import Function, function
from ffigraph.compile.io import In, Out
from ffigraph.compile.mode import Mode, get_mode, predefined_linkers, predefined_modes, register_linker, register_mode
from ffigraph.compile.debugmode import DebugMode  # registers the "DebugMode" mode name
from ffigraph.compile.monitormode import MonitorMode  # registers "MonitorMode"
from ffigraph.compile.nanguardmode import NanGuardMode  # registers "NanGuardMode"
from ffigraph.compile.ops import (
    DeepCopyOp,
    Shape,
    Shape_i,
    ViewOp,
    deep_copy_op,
    register_deep_copy_op_c_code,
    register_shape_c_code,
    register_shape_i_c_code,
    register_view_op_c_code,
    view_op,
)
from ffigraph.compile.sharedvalue import SharedVariable, shared

__all__ = [
    "Function", "function", "In", "Out", "Mode", "get_mode", "predefined_linkers", "predefined_modes",
    "DebugMode", "MonitorMode", "NanGuardMode", "register_linker", "register_mode", "DeepCopyOp", "Shape",
    "Shape_i", "ViewOp", "deep_copy_op",
    "view_op", "register_deep_copy_op_c_code", "register_shape_c_code", "register_shape_i_c_code",
    "register_view_op_c_code", "SharedVariable", "shared",
]
