"""A compiler wrapper that shares Verilator's runtime objects between builds.

Every Verilator build compiles the same runtime (``verilated.cpp``,
``verilated_vpi.cpp``, ``verilated_threads.cpp``, ``verilated_dpi.cpp``, from
Verilator's ``include`` folder) into its own directory: about 30 s of CPU per
build, most of a small block's build and the same bytes each time.
:func:`opengse.sim.runner.build_block` sets Verilator's ``OBJCACHE`` make
variable to this script, so every compile runs through it as::

    python objcache.py CACHE_DIR CXX ARGS... -c -o TARGET.o SOURCE.cpp

A source from Verilator's ``include`` folder is looked up in ``CACHE_DIR`` by a
digest of the whole compile command, the compiler binary (path, size, time stamp)
and the source file's bytes; on a hit the
object (and its ``-MMD`` dependency file) is copied into the build directory
with a fresh time stamp, on a miss it is compiled and stored. Any other source
(the model itself, cocotb's ``verilator.cpp``, which includes the model's
header) is compiled as it would be without the wrapper. A lock per digest keeps
two pytest-xdist workers from compiling the same object at once.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _shared_source(args):
    """The Verilator runtime source compiled by ``args``, else ``None``."""
    if "-c" not in args or "-o" not in args:
        return None
    src = Path(args[-1])
    if src.suffix != ".cpp" or not src.is_absolute() or not src.name.startswith("verilated"):
        return None
    if not (src.parent / "verilated.mk").exists():  # Verilator's include folder
        return None
    return src


def main(argv):
    cache_dir, cmd = Path(argv[0]), argv[1:]
    src = _shared_source(cmd)
    if src is None:
        return subprocess.call(cmd)
    target = Path(cmd[cmd.index("-o") + 1])
    dep = target.with_suffix(".d")
    compiler = shutil.which(cmd[0]) or cmd[0]
    st = os.stat(compiler) if os.path.exists(compiler) else None
    identity = f"{os.path.realpath(compiler)}:{st and st.st_size}:{st and st.st_mtime_ns}"
    key = "\0".join([identity, *cmd]).encode() + b"\0" + src.read_bytes()
    digest = hashlib.sha1(key).hexdigest()[:16]
    cache_dir.mkdir(parents=True, exist_ok=True)
    stored = cache_dir / f"{target.stem}-{digest}.o"
    stored_dep = stored.with_suffix(".d")
    with open(cache_dir / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stored.exists():
            rc = subprocess.call(cmd)
            if rc != 0:
                return rc
            for path, into in ((target, stored), (dep, stored_dep)):
                if path.exists():
                    tmp = into.with_name(f"{into.name}.{os.getpid()}.tmp")
                    shutil.copyfile(path, tmp)
                    os.replace(tmp, into)
            return 0
    # A hit: copyfile gives the copy a fresh time stamp, newer than the Vtop.mk the
    # global objects depend on, so make does not compile them again.
    shutil.copyfile(stored, target)
    if stored_dep.exists():
        shutil.copyfile(stored_dep, dep)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
