"""The binary's rules for the paths the scripts read and write, in one place for scripts/plot.py,
compare.py, ckptreport.py and realfw.py (each imports it from its own directory).

Reading (read_input; src/base/jsonread.cpp, InputFile): a file given to read is stat()ed first and
refused unless it is a regular file ("is a FIFO (...), not a regular file": a FIFO would block
the read until a writer came, a device could be endless); then opened O_RDONLY | O_NONBLOCK (a
FIFO swapped in after the stat cannot block the open), the descriptor fstat()ed and checked
again, its size checked against the caller's cap before anything is read, and read to EOF (never
more than the cap, should the file grow meanwhile).

Writing (check_output_file, check_output_dir, write_atomic; src/run/preflight.cpp check_output_path,
src/analysis/report.cpp): an output path is checked before any work: an output file must not name a
directory or anything but a regular file (a FIFO, a device), an output directory must be one (or
not exist yet), and the directory it goes in - or the nearest existing one above it, where the
missing ones would be made - must be a directory this user may write, not on a kernel pseudo
file system.
A file is written to a temporary file beside it and renamed into place: a failure (a full or
read-only file system) leaves neither half a file nor the directories made for it.

Targets (check_target; src/fs/lock.cpp check_target, src/run/preflight.cpp): the directories
ckptbench refuses to write in: the system directories (SYSTEM_DIRS), also when a symbolic link
leads there, the user's home directory itself, a symbolic link as the target, and a kernel pseudo
file system (proc, sysfs, cgroup, ...).

Every refusal raises PathError, its message naming the path (or the option and the path) and
what is wrong; the scripts print it after "SCRIPT: error: " and exit 2. Standard library only.
"""

import os
import pwd
import stat
import tempfile

# src/fs/lock.cpp, check_target.
SYSTEM_DIRS = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/root", "/run",
               "/sbin", "/sys", "/usr", "/var", "/home", "/opt", "/srv", "/tmp", "/var/tmp",
               "/mnt", "/media")
# src/fs/fs.cpp, pseudo_fs_name: file systems whose directories are kernel objects, not storage
# (as /proc/self/mounts names them).
PSEUDO_FS = ("sysfs", "proc", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "bpf",
             "pstore", "devpts", "efivarfs", "selinuxfs", "configfs", "fusectl", "mqueue", "nsfs",
             "binfmt_misc")

_UMASK = os.umask(0o022)
os.umask(_UMASK)


class PathError(Exception):
    """A path refused, or an I/O error on it; the message names the path."""


_KINDS = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
          (stat.S_ISFIFO, "a FIFO (a named pipe, or a pipe such as <(...) gives)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link"))


def file_kind(mode):
    """What a file of this st_mode is, for a message (src/base/jsonread.cpp, file_kind_text)."""
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def _not_regular(mode):
    kind = file_kind(mode)
    return kind if kind.startswith("not ") else f"is {kind}, not a regular file"


def size_text(n):
    """A byte count as the binary words a limit: "256 MiB", "1 GiB"."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


# ---------------------------------------------------------------- reading

def read_input(path, limit):
    """The bytes of the regular file at path, at most limit of them. PathError naming path when
    it is not a regular file (before it is opened, and again on the open descriptor), cannot be
    read, or is larger than limit (before anything is read)."""
    too_big = f"larger than {size_text(limit)}, the most these scripts read"
    try:
        st = os.stat(path)  # a socket cannot be opened, a device may act on being opened
        if not stat.S_ISREG(st.st_mode):
            raise PathError(f"{path}: {_not_regular(st.st_mode)}")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise PathError(f"{path}: cannot read ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)  # the descriptor decides: the path may have been replaced meanwhile
        if not stat.S_ISREG(st.st_mode):
            raise PathError(f"{path}: {_not_regular(st.st_mode)}")
        if st.st_size > limit:
            raise PathError(f"{path}: {st.st_size} bytes, {too_big}")
        os.set_blocking(fd, True)
        chunks, got = [], 0
        while got <= limit:  # to EOF: the size may have changed since the fstat
            chunk = os.read(fd, min(limit + 1 - got, max(st.st_size + 1 - got, 1 << 20)))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as e:
        raise PathError(f"{path}: cannot read ({e.strerror or e})") from None
    finally:
        os.close(fd)
    if got > limit:
        raise PathError(f"{path}: {too_big}")
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# ---------------------------------------------------------------- writing

def _stat_or_none(path, what):
    """os.stat(path), or None when it does not exist (or a directory on its way is a file)."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise PathError(f"{what}: cannot examine {path} ({e.strerror or e})") from None


def _writable_dir(d, what):
    """PathError unless the existing d is a directory this process may create files in."""
    st = _stat_or_none(d, what)
    if st is None:
        raise PathError(f"{what}: {d} is a symbolic link that leads nowhere")
    if not stat.S_ISDIR(st.st_mode):
        raise PathError(f"{what}: {d} is {file_kind(st.st_mode)}, not a directory")
    fstype = _mount_type(os.path.realpath(d))
    if fstype in PSEUDO_FS:
        raise PathError(f"{what}: {d} is on {fstype}, a kernel pseudo file system, not storage")
    if not os.access(d, os.W_OK | os.X_OK):
        try:
            ro = os.statvfs(d).f_flag & os.ST_RDONLY
        except OSError:
            ro = False
        why = "on a read-only file system" if ro else "no write permission for this user"
        raise PathError(f"{what}: the directory {d} is not writable ({why})")


def _nearest_existing(path, what):
    """The nearest existing ancestor of path (where the missing directories would be made)."""
    d = os.path.dirname(os.path.abspath(path))
    while _stat_or_none(d, what) is None:
        # A file on the way (a/file/b): os.stat says ENOTDIR for a/file/b, and a/file exists.
        try:
            os.lstat(d)
            break
        except OSError:
            pass
        d = os.path.dirname(d)
    return d


def check_output_file(path, option):
    """PathError (naming option and path) unless path can be written as a file: absent or a
    regular file, in a writable directory or below the nearest existing one."""
    what = f"{option} {path}"
    st = _stat_or_none(path, what)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise PathError(f"{what}: is a directory; give a file name")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise PathError(f"{what}: {_not_regular(st.st_mode)}, which the output would replace; "
                        "give a file name")
    _writable_dir(_nearest_existing(path, what), what)


def check_output_dir(path, option):
    """PathError (naming option and path) unless path is a writable directory, or can be made
    as one below the nearest existing directory."""
    what = f"{option} {path}"
    st = _stat_or_none(path, what)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise PathError(f"{what}: exists and is {file_kind(st.st_mode)}, not a directory; give a "
                        "directory (made when missing)")
    _writable_dir(path if st is not None else _nearest_existing(path, what), what)


def make_dirs(d):
    """os.makedirs(d) that returns the directories it made, top first (for remove_dirs)."""
    made, d = [], os.path.abspath(d)
    while not os.path.isdir(d):
        made.append(d)
        d = os.path.dirname(d)
    for m in reversed(made):
        try:
            os.mkdir(m)
        except FileExistsError:
            pass
    return list(reversed(made))


def remove_dirs(made):
    """Removes the (empty) directories make_dirs made, deepest first; errors are ignored."""
    for m in reversed(made):
        try:
            os.rmdir(m)
        except OSError:
            pass


def write_atomic(path, write, option, mode="w", **open_args):
    """Writes the file path: write(f) fills a temporary file beside it (open(..., mode,
    **open_args)), which is then renamed to path; missing directories are made. PathError
    (naming option and path) on a failure, after removing the temporary file and the directories
    made: nothing half-written stays."""
    what = f"{option} {path}" if option else path
    made, tmp, done = [], None, False
    try:
        made = make_dirs(os.path.dirname(os.path.abspath(path)))
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                                   prefix=f".{os.path.basename(path)}.", suffix=".tmp")
        os.fchmod(fd, 0o666 & ~_UMASK)  # as open() would make it, not mkstemp's 0600
        with open(fd, mode, **open_args) as f:
            write(f)
        os.replace(tmp, path)
        done = True
    except OSError as e:
        where = "" if e.filename in (None, path) else f" ({e.filename})"
        raise PathError(f"{what}: cannot write{where}: {e.strerror or e}") from None
    finally:
        if not done:  # any failure, the writer's own exceptions included
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            remove_dirs(made)


# ---------------------------------------------------------------- targets

def _mount_type(path):
    """The file system type /proc/self/mounts gives the mount holding path, or None."""
    best, fstype = "", None
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mnt = parts[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
                inside = path == mnt or path.startswith(mnt.rstrip("/") + "/")
                if inside and len(mnt) >= len(best):
                    best, fstype = mnt, parts[2]
    except OSError:
        return None
    return fstype


def _system_path_error(target, abspath_):
    """The refusal of target when it names a system directory, through links or not, or None."""
    if abspath_ in SYSTEM_DIRS:
        return (f"'{target}': refusing a system directory; use a directory of your own below "
                f"it, e.g. {'/scratch' if abspath_ == '/' else abspath_}/ckpt")
    sofar, missing = "", False
    for comp in abspath_.strip("/").split("/"):
        sofar += "/" + comp
        try:
            is_link = stat.S_ISLNK(os.lstat(sofar).st_mode)
        except OSError:
            missing = True
            break
        if is_link and os.path.realpath(sofar) in SYSTEM_DIRS:
            return (f"'{target}': the path goes through the symbolic link '{sofar}' -> "
                    f"'{os.path.realpath(sofar)}', a system directory; give a path without "
                    "that link")
    real = os.path.realpath(abspath_)
    if not missing and real in SYSTEM_DIRS:
        return (f"'{target}': is the system directory '{real}' through symbolic links; use a "
                "directory of your own below it")
    return None


def check_target(target, option="--target"):
    """PathError when ckptbench would refuse target as the directory to write in (src/fs/lock.cpp
    check_target): a system directory (SYSTEM_DIRS; also through symbolic links), the home
    directory itself, a symbolic link, not a directory, or on a kernel pseudo file system.
    Only looks: nothing is made."""
    if not target:
        raise PathError(f"{option}: no directory given")
    abspath_ = os.path.normpath(os.path.abspath(target))
    if abspath_.startswith("//"):
        abspath_ = "/" + abspath_.lstrip("/")
    why = _system_path_error(target, abspath_)
    homes = [os.environ.get("HOME")]
    try:
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    real = os.path.realpath(abspath_)
    for h in (h for h in homes if h):
        if why is None and real == os.path.realpath(h):
            why = f"'{target}': refusing your home directory itself; use a subdirectory"
    st = _stat_or_none(abspath_, f"{option} '{target}'")
    try:
        lst = os.lstat(abspath_)
    except OSError:
        lst = None
    if why is None and lst is not None and stat.S_ISLNK(lst.st_mode):
        why = f"'{target}': is a symbolic link; give the real directory"
    if why is None and st is not None and not stat.S_ISDIR(st.st_mode):
        why = f"'{target}': exists and is {file_kind(st.st_mode)}, not a directory"
    if why is None:
        at = real if st is not None else os.path.realpath(_nearest_existing(abspath_, option))
        fstype = _mount_type(at)
        if fstype in PSEUDO_FS:
            why = (f"'{target}' is on {fstype}" + ("" if at == real else f" ({at})") +
                   ", a kernel pseudo file system, not storage: give a target on a real file "
                   "system")
    if why is not None:
        raise PathError(f"{option} {why}. Allowed, as by ckptbench: a directory of your own "
                        "(made when missing), not a system directory (/, /etc, /home, /tmp, "
                        "/var/tmp, ...) nor reached through a link to one, not your home "
                        "directory itself, not on a kernel pseudo file system")

