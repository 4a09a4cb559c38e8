"""The model the embedder runs: the pinned MiniLM file, requantized for int8 arithmetic.

The packaged file stores int8 weights, but onnxruntime folds them back into float32 at load and
multiplies in float32: a 12-token query costs ~4.4 ms on one core, nearly all of it in the 42
weight products (at one token the 42 MB of float32 weights are read per run). Requantized with
onnxruntime's dynamic quantization (int8 weights, one scale per output channel; activations
quantized per run; the attention products between activations left in float32), the same query
costs ~1.0 ms, and its vectors stay within cosine 0.99 of the pinned model's (p5 over dev turns
and questions; pairwise similarities correlate at 0.997). Retrieval quality was measured on the
dev file before this became the default (docs/retrieval.md, "The embedding model's arithmetic").

The requantized file is derived: built from the pinned file (a few seconds) into
``DATA_DIR/models/`` under the pinned file's checksum, with its own checksum beside it, and read
back on later loads; a missing or damaged file is built again (written atomically, so two
processes building at once are harmless).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

RECIPE = "dynamic-int8-per-channel-v1"


def derived_path(source_sha256: str) -> Path:
    return Path(settings.DATA_DIR) / "models" / f"minilm-{RECIPE}-{source_sha256[:16]}.onnx"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_atomically(target: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _not_from_onnxruntime(record: logging.LogRecord) -> bool:
    return "onnxruntime" not in record.pathname


@contextlib.contextmanager
def _quiet_quantization_tool() -> Iterator[None]:
    """The quantization tool logs each graph tensor it skips straight on the root logger: drop
    those records for the build (a few seconds, once per data directory). A filter on the root
    logger sees only records logged on it directly, so every other logger is untouched."""
    root = logging.getLogger()
    root.addFilter(_not_from_onnxruntime)
    try:
        yield
    finally:
        root.removeFilter(_not_from_onnxruntime)


def build(source: Path, target: Path) -> None:
    """Fold the pinned file's weights (onnxruntime's basic graph optimizations), then quantize
    every weight product dynamically to int8 with per-channel scales."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
        folded, quantized = Path(work) / "folded.onnx", Path(work) / "quantized.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        graph = onnx.load(str(folded)).graph
        weights = {initializer.name for initializer in graph.initializer}
        between_activations = [
            node.name
            for node in graph.node
            if node.op_type == "MatMul" and not any(name in weights for name in node.input)
        ]
        with _quiet_quantization_tool():
            quantize_dynamic(
                str(folded),
                str(quantized),
                weight_type=QuantType.QInt8,
                per_channel=True,
                nodes_to_exclude=between_activations,
            )
        data = quantized.read_bytes()
    _write_atomically(target, data)
    _write_atomically(target.with_suffix(".sha256"), hashlib.sha256(data).hexdigest().encode())


def requantized(source: Path, source_sha256: str) -> Path:
    """The derived file for the pinned ``source``: the one on disk when its checksum holds, else
    built now."""
    target = derived_path(source_sha256)
    check = target.with_suffix(".sha256")
    try:
        if check.read_text().strip() == _sha256(target):
            return target
    except OSError:
        pass
    build(source, target)
    return target
