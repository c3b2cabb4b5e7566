"""Files and folders only their owner may write: how the compile cache and the compiler driver
touch the disk.

Loading a library runs its code and unmarshalling a code object runs it too, so whatever the
cache reads it must know to be the user's own: every folder on the way to it and the file itself
owned by the current user, not writable by group or others, and not a symbolic link
(``check_private``, ``check_folders``). Whatever it writes it writes the same way: a new file
under a random name opened with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (so a link planted there is
never followed), then renamed over the target (a rename replaces a link, it does not write
through it), mode 0600 whatever the umask (``write_private_file``).

A full disk is reported as ``CacheNoSpaceError`` naming what was being written, where, and how
much room that needed. A leaf module: it imports nothing of ffigraph.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat

_NO_SPACE = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


class CacheSecurityError(RuntimeError):
    """A cache folder or entry is owned by someone else, writable by group/others, or a link."""


class CacheNoSpaceError(OSError):
    """The disk (or quota) holding the compile cache is full: ``what`` could not be written in
    ``folder``, which needed about ``needed`` bytes."""

    def __init__(self, what, folder, needed):
        try:
            free = "%s free" % _megabytes(shutil.disk_usage(folder).free)
        except OSError:
            free = "free space unknown"
        super().__init__(errno.ENOSPC, "no space left on device writing %s in %s: it needs about %s there "
                                       "(%s); free some space, or point ffigraph.config.compiledir (or "
                                       "FFIGRAPH_FLAGS=compiledir=...) at a disk with room"
                         % (what, folder, _megabytes(needed), free))
        self.what, self.folder, self.needed = what, folder, needed


def _megabytes(n):
    return "%.1f MB" % (n / 1e6) if n >= 100000 else "%d kB" % max(1, (n + 999) // 1000)


def is_no_space(err):
    """Whether the OSError ``err`` says the disk or the quota is full."""
    return isinstance(err, OSError) and err.errno in _NO_SPACE


def check_private(path):
    """Refuse ``path`` unless the current user owns it and no one else may write to it (a link is
    refused too: what it points at is not checked). OSError when it is absent."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise CacheSecurityError("%s is a symbolic link; the compile cache refuses links (remove it)" % path)
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        raise CacheSecurityError("%s is owned by uid %d, not by you (uid %d); loading it would run another "
                                 "user's code. Remove it or point ffigraph.config.compiledir elsewhere."
                                 % (path, st.st_uid, os.getuid()))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheSecurityError("%s is writable by group or others (mode %o); fix it with "
                                 "'chmod go-w %s' or remove it" % (path, stat.S_IMODE(st.st_mode), path))


def check_folders(base, *names):
    """``base/names[0]/names[1]/...`` after checking ``base`` and every folder below it on the way
    (``check_private``; the last name is checked too, folder or file). OSError when one is absent."""
    path = base
    check_private(path)
    for name in names:
        path = os.path.join(path, name)
        check_private(path)
    return path


def private_dir(path):
    """``path`` made (mode 0700) if needed, then checked (``check_private``)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:   # its parent is missing too
        os.makedirs(path, mode=0o700, exist_ok=True)
    check_private(path)
    return path


def write_private_file(path, data, what=None, mode=0o600):
    """Write ``data`` (bytes) to ``path``, the owner's alone (``mode`` whatever the umask), atomically:
    readers see no file or a whole one, and a link at ``path`` is replaced, never written through.
    Raises OSError (CacheNoSpaceError when the disk is full; ``what`` names the file there)."""
    tmp = "%s.%s.tmp" % (path, os.urandom(16).hex())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)   # (the umask may have removed bits of an executable's mode)
        os.replace(tmp, path)
    except OSError as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if is_no_space(err) and not isinstance(err, CacheNoSpaceError):
            raise CacheNoSpaceError(what or os.path.basename(path), os.path.dirname(path) or ".",
                                    len(data)) from None
        raise


def publish_private_file(path, data):
    """``write_private_file`` as best effort: False when it could not be written."""
    try:
        write_private_file(path, data)
        return True
    except OSError:
        return False


def read_private_file(path):
    """The bytes of ``path``, or None when it is absent or unreadable; CacheSecurityError when
    another user owns it, others may write it or it is a link (what is read may be run)."""
    try:
        check_private(path)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    except OSError:
        return None
