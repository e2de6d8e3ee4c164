"""The graph a server loads, built once per install and then loaded as is.

Steps, in a scratch directory beside the cache: the BERT graph from the safetensors weights
(bert_onnx.py; for the int8-row path with its linear layers in integers, each token's row scaled
on its own); for the int8 path, onnxruntime's dynamic quantisation of the fp32 graph (weights int8
per output channel, activations quantised per call); then onnxruntime's graph optimisation,
saved with the weights in an external file. A server loads the result with nothing left to fuse
or fold, and onnxruntime maps the weights file instead of holding copies made while optimising.

The build runs in a child process: whatever it allocates (a quantiser holding the whole model,
the optimiser's copies of every weight) is returned to the system when the child exits, so the
server's resident memory never carries it.

    python -m spatial_memory.embeddings.graph_build MODEL_DIR OUTPUT {fp32,int8,int8-row}
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from . import bert_onnx

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "int8", "int8-row")
BUILD_DIR_PREFIX = ".build-"
BUILD_TIMEOUT_SECONDS = 900


def data_file(graph: Path) -> Path:
    """The external weights file of a cached graph."""
    return graph.with_name(graph.name + ".data")


def build_graph(model_dir: Path, output: Path, precision: str) -> None:
    """Build `output` (and its data file) in a child process; in this one when no child can run."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", __name__, str(model_dir), str(output), precision]
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,  # stdin is the MCP transport
            capture_output=True,
            text=True,
            env=env,
            timeout=BUILD_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("could not build the ONNX graph in a child process (%s); building it here", exc)
    else:
        if done.returncode == 0 and output.exists():
            return
        log.warning(
            "building the ONNX graph in a child process failed (exit %s): %s; building it here",
            done.returncode,
            done.stderr.strip()[-2000:],
        )
    build_graph_here(model_dir, output, precision)


def _end_with_parent() -> None:
    """Linux: this builder (the child) is killed when the server that started it ends (a signal
    stops the server at once; an orphan build would go on using the CPU for nothing)."""
    if sys.platform.startswith("linux"):
        import ctypes  # only in the builder child, once

        try:
            ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
        except (OSError, AttributeError):
            pass


def build_graph_here(model_dir: Path, output: Path, precision: str) -> None:
    """Build in this process, in a scratch directory, then move the data file and the graph into
    place (in that order: a graph that exists has its data). Two builders at once both succeed."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: one of {', '.join(PRECISIONS)}")

    output.parent.mkdir(parents=True, exist_ok=True)
    scratch = output.parent / f"{BUILD_DIR_PREFIX}{os.getpid()}-{threading.get_ident()}"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        source = scratch / "fp32.onnx"
        bert_onnx.build_bert_mean_pooling_onnx(model_dir, source, int8_rows=precision == "int8-row")
        if precision == "int8":
            source = _quantise(source, scratch / "int8.onnx")
        _optimise(source, scratch / output.name)
        os.replace(data_file(scratch / output.name), data_file(output))
        os.replace(scratch / output.name, output)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _quantise(source: Path, target: Path) -> Path:
    """int8 weights per output channel; reduce_range keeps them to 7 bits, so CPUs without VNNI
    (whose u8 x s8 instruction can saturate) give the same vectors as those with it."""
    # The quantiser (and the onnx it needs) only while a graph is built, once per install.
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.getLogger().setLevel(logging.ERROR)  # the quantiser's advice on pre-processing
    quantize_dynamic(
        source,
        target,
        weight_type=QuantType.QInt8,
        per_channel=True,
        reduce_range=True,
        use_external_data_format=True,
    )
    return target


def onnxruntime_module() -> Any:
    """onnxruntime, imported with its telemetry events off. The load-time switch is
    ORT_DISABLE_TELEMETRY (spatial_memory/__init__.py); this is the run-time one, for a process that
    imported onnxruntime some other way first. Every module of ours takes onnxruntime from here."""
    import onnxruntime  # loads with the model, never before tools/list

    onnxruntime.disable_telemetry_events()
    return onnxruntime


def _optimise(source: Path, target: Path) -> None:
    """onnxruntime's optimisations up to EXTENDED (fusions such as attention and layer norm; not
    ALL's hardware-specific layouts), saved with every weight of 1 KB or more in target.data."""
    ort = onnxruntime_module()

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(target)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", data_file(target).name)
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    options.log_severity_level = 3
    ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[2] not in PRECISIONS:
        print(__doc__, file=sys.stderr)
        return 2
    _end_with_parent()
    build_graph_here(Path(argv[0]), Path(argv[1]), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
