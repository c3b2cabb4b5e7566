"""Compiling graphs into callables: ``function``, ``Mode``, ``In``/``Out``, ``shared``."""
from ffigraph.compile.function import Function, UnusedInputError, function
from ffigraph.compile.builders import OpFromGraph
from ffigraph.compile.io import In, Out
from ffigraph.compile.mode import Mode, get_mode, predefined_linkers, predefined_modes, register_linker, register_mode
from ffigraph.compile.debugmode import DebugMode  # registers the "DebugMode" mode name
from ffigraph.compile.monitormode import MonitorMode  # registers "MonitorMode"
from ffigraph.compile.nanguardmode import NanGuardMode  # registers "NanGuardMode"
from ffigraph.compile import ops as _ops
from ffigraph.compile.ops import *  # noqa: F401,F403  (the type-generic ops, under PyTensor's compile path)
from ffigraph.compile.sharedvalue import SharedVariable, shared

__all__ = [
    "Function", "function", "In", "Out", "Mode", "get_mode", "predefined_linkers", "predefined_modes",
    "DebugMode", "MonitorMode", "NanGuardMode", "register_linker", "register_mode", "SharedVariable", "shared",
    "OpFromGraph", "UnusedInputError",
]
__all__ += _ops.__all__   # (two statements, which mypy reads as the names exported)
