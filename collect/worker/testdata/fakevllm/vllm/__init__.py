"""A TEST DOUBLE of vLLM for ftk's worker tests: not vLLM.

It exposes the operators ftk's worker calls, with the signatures vLLM's
source gives them (each cited where it is defined), computed in plain
PyTorch on the CPU. Every op checks its arguments the way vLLM's kernels
require them (shapes, dtypes, in-place outputs), so a worker that calls an
op wrongly fails here, and one that calls a name vLLM lacks is refused.

FAKE_VLLM_DROP=name1,name2 leaves those ops out (a renamed or removed op);
FAKE_VLLM_LOG=path appends the name of every op called, one a line."""
import os

__version__ = "0.0.0+ftk.test.double"

_DROP = set(filter(None, os.environ.get("FAKE_VLLM_DROP", "").split(",")))


def _called(name):
    path = os.environ.get("FAKE_VLLM_LOG")
    if path:
        with open(path, "a") as f:
            f.write(name + "\n")


def _require(cond, msg):
    if not cond:
        raise RuntimeError("fake vllm: " + msg)
