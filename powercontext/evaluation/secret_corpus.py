"""Recall and false positives of the redactor on the secret corpus (``data/secrets.jsonl``).

Each line is one sample: a realistic line or snippet with a fake secret in it and the secret's
``shape`` (``huggingface_token``, ``pgpass``, ``cookie_header`` …), or a near miss (``"negative":
true``) that must survive unchanged (UUIDs in prose, commit ids, digests, base64 images, long
identifiers, prose about passwords …). The secret is stored as pieces (``"secret": ["hf_",
"…"]``) and put into the text where ``{{secret}}`` stands when the corpus is loaded, so that no
line of the file holds a whole provider-shaped token for a secret scanner to report.

A sample is *caught* when no ``WITNESS`` consecutive characters of its secret survive (a marker
over half a token, or over the first word of a passphrase, is a miss); a negative is a *false
positive* when the redactor changes it at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "secrets.jsonl"
PLACEHOLDER = "{{secret}}"
WITNESS = 8
RECALL_FLOOR = 0.99


@dataclass(frozen=True)
class Sample:
    shape: str
    text: str
    secret: str = ""  # empty for a negative

    @property
    def negative(self) -> bool:
        return not self.secret


@dataclass
class ShapeFigures:
    shape: str
    samples: int = 0
    caught: int = 0
    negatives: int = 0
    changed: int = 0


@dataclass
class Report:
    shapes: dict[str, ShapeFigures] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)  # shape names, one per missed sample
    changed: list[str] = field(default_factory=list)  # shape names, one per changed negative

    @property
    def samples(self) -> int:
        return sum(f.samples for f in self.shapes.values())

    @property
    def caught(self) -> int:
        return sum(f.caught for f in self.shapes.values())

    @property
    def negatives(self) -> int:
        return sum(f.negatives for f in self.shapes.values())

    @property
    def false_positives(self) -> int:
        return sum(f.changed for f in self.shapes.values())

    @property
    def recall(self) -> float:
        return self.caught / self.samples if self.samples else 1.0

    @property
    def passes(self) -> bool:
        return self.recall >= RECALL_FLOOR and self.false_positives == 0

    def as_dict(self) -> dict[str, object]:
        return {
            "samples": self.samples,
            "caught": self.caught,
            "recall": round(self.recall, 4),
            "negatives": self.negatives,
            "false_positives": self.false_positives,
            "passes": self.passes,
            "shapes": [vars(f) for f in sorted(self.shapes.values(), key=lambda f: f.shape)],
        }


def load(path: Path = DATA) -> list[Sample]:
    samples = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("negative"):
                samples.append(Sample(row["shape"], row["text"]))
                continue
            secret = "".join(row["secret"])
            if PLACEHOLDER not in row["text"] or not secret:
                raise ValueError(
                    f"{path.name}:{number}: a sample needs a secret and a {PLACEHOLDER} in its text"
                )
            samples.append(Sample(row["shape"], row["text"].replace(PLACEHOLDER, secret), secret))
    return samples


def survives(secret: str, text: str) -> bool:
    """Whether any ``WITNESS`` consecutive characters of ``secret`` (all of it, if shorter) are in ``text``."""
    width = min(WITNESS, len(secret))
    return any(secret[i : i + width] in text for i in range(len(secret) - width + 1))


def evaluate(samples: Iterable[Sample], redact: Callable[[str], str]) -> Report:
    report = Report()
    for sample in samples:
        figures = report.shapes.setdefault(sample.shape, ShapeFigures(sample.shape))
        redacted = redact(sample.text)
        if sample.negative:
            figures.negatives += 1
            if redacted != sample.text:
                figures.changed += 1
                report.changed.append(sample.shape)
        else:
            figures.samples += 1
            if survives(sample.secret, redacted):
                report.missed.append(sample.shape)
            else:
                figures.caught += 1
    return report


# Prefixes and openings of the shapes the redactor knows, repeated without their secret: the
# inputs that would make a backtracking expression or a rescanning detector slow.
ADVERSARIAL_UNITS: tuple[str, ...] = (
    "hf_",
    "dop_v1_",
    "shpat_",
    "whsec_",
    "AIza",
    "GOCSPX-",
    "abc8Q~",
    "hvs.",
    "AGE-SECRET-KEY-1",
    "lin_api_",
    "secret_",
    "PMAK-",
    "NRAK-",
    "glsa_",
    "dapi",
    "sbp_",
    "dp.st.",
    "pul-",
    "gsk_",
    "r8_",
    "sntrys_",
    "aaaaaaaaaaaaaa.atlasv1.",
    "key-",
    "sk-ant-api03-",
    "https://discord.com/api/webhooks/12345678901234567/",
    "private key ",
    "machine h login u ",
    "password ",
    "machine ",
    "a:1:b:c:",
    "Cookie: a=b;",
    "cookie:a=1;",
    "Set-Cookie: s=",
    "-b a=",
    "password: aa bb ",
    "data:image/png;base64,",
    "sha512-",
)


def mixed_text(samples: Iterable[Sample], size: int, adversarial_run: int = 4096) -> str:
    """``size`` characters of the corpus's texts interleaved with runs of every adversarial unit
    (each run ``adversarial_run`` characters, as one line and as many short lines)."""
    texts = [sample.text for sample in samples]
    parts: list[str] = []
    length = 0
    index = 0
    while length < size:
        unit = ADVERSARIAL_UNITS[index % len(ADVERSARIAL_UNITS)]
        run = unit * (adversarial_run // len(unit))
        if index % 2:
            run = "\n".join(run[i : i + 80] for i in range(0, len(run), 80))
        piece = "\n".join(texts[(index * 7 + k) % len(texts)] for k in range(7)) + "\n" + run + "\n"
        parts.append(piece)
        length += len(piece)
        index += 1
    return "".join(parts)[:size]
