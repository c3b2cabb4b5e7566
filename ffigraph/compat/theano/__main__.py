"""``python -m ffigraph.compat.theano script.py [args...]``: run a Theano script on ffigraph.

``python -m ffigraph.compat.theano -m package.module [args...]`` runs a module the same way.
The switch (``ffigraph.compat.theano.install()``) is on before the script's first line, and the
script runs as ``python script.py [args...]`` would run it: ``__name__ == "__main__"``,
``sys.argv == ["script.py", args...]``, the script's folder first on ``sys.path``; its exit status
(``sys.exit(n)``, 1 after an uncaught exception) is the command's.
"""
import os
import runpy
import sys

from ffigraph.compat.theano import install

USAGE = ("usage: python -m ffigraph.compat.theano script.py [args...]\n"
         "       python -m ffigraph.compat.theano -m module [args...]\n"
         "Runs a program written for Theano with 'import theano' resolved to ffigraph.")


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    if args[0] == "-m":
        if len(args) < 2:
            print("python -m ffigraph.compat.theano: -m needs a module name\n" + USAGE, file=sys.stderr)
            return 2
        install()
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        return 0
    script = args[0]
    if not os.path.exists(script):
        print("python -m ffigraph.compat.theano: can't open file %r: no such file" % (script,), file=sys.stderr)
        return 2
    install()
    sys.argv = args
    # as ``python script.py``: the script's folder replaces the current one at the head of sys.path
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
