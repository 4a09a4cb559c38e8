"""Reviewed text rendered as safe Markdown, with its hidden characters still shown as markers.

Pure module: a maintained renderer (markdown-it-py, CommonMark plus tables and strikethrough) with
raw HTML and images turned off, then a maintained sanitizer (nh3) with a strict allow-list:
text-level and block tags only; ``href`` is the one attribute (besides ``start`` on ``ol``) and
only ``http``, ``https`` and ``mailto`` URLs survive (relative ones are dropped), every link gets
``rel="nofollow noopener noreferrer"``; no images, no styles, no ids, no classes but the
fence label's own. Whatever the
text holds (``<script>``, ``javascript:`` links, ``onerror=`` attributes, entities) comes out as
inert text or not at all.

The sanitized HTML's text then goes through the same marking as plain text (``review.textmarks``):
each bidirectional control or invisible character, including one the renderer produced from an
entity such as ``&#x202E;``, is replaced by the marker the caller renders, so the rendered view
never applies it. ``render`` returns the HTML and the kinds of marked characters it holds.

What the reviewer sees is what agents get (issues 20 and 32). Agents receive the source text, so
Markdown that carries text the page does not show is flagged (``render`` reports ``HIDDEN_TEXT``
with the source lines that hold it, which the page lists in its warning banner, and bulk approval
leaves the candidate out). What is shown instead of being hidden:

- each link's destination, after the link text (unless the text already is the destination);
- a code fence's info string, as a label above its block (``<p class="fence-info">``).

What is flagged, by construct (``_Accounting``):

- a link title (``[a](url "title")``, ``[a]: url "title"``): dropped from the page, as are
  ``title``/``lang`` attributes;
- a fence's info string that is not one plain language name (``LANGUAGES``): shown, but an
  instruction there (```` ```always-push-to-main ````) is easy to read past;
- reference-link surplus: a link reference definition no link uses, or a repeated one (the
  first definition of a label wins, the later ones are never rendered);

and by word, for any other construct: every word (run of letters and digits) of the source must
be on the page, counted as a multiset, so a word the Markdown drops (a full reference link's
label, a table row's excess cells, text past the nesting limit) is flagged. Punctuation the
Markdown consumes (``*``, ``#``, ``[``, a backslash) and the names of named entities that render
as a symbol (``&nbsp;``, ``&copy;``) are not words here. The count is exact, never inflated: the
page shows a reference definition's destination after every link that uses it, but it counts
once (it is written once), so repeating a reference cannot make up for words hidden elsewhere;
ordered-list numbers, drawn by the browser, count as written.

Rendering is linear but costs up to ~20 µs for some characters (each ``[`` tries a link, each line
runs the block rules), so a page full of maximum-length adversarial fields would take seconds.
``cost`` estimates the work from character counts; pages spend at most ``PAGE_BUDGET`` of it and
show the remaining fields as written.
"""

from __future__ import annotations

import html as html_lib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml, mdTrim, unescapeAll
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import OptionsDict

from review.textmarks import HIDDEN_TEXT, Mark, has_marks, kinds_in, pieces

ALLOWED_TAGS = frozenset(
    {
        "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
        "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "nofollow noopener noreferrer"
# The one class the sanitized HTML may hold: the label showing a code fence's info string.
FENCE_INFO_CLASS = "fence-info"

# A code fence's info string that is one of these names (any case) is a plain language tag: shown
# as the block's label and not flagged. Anything else (another word, a second word, attributes) is
# shown too, and flagged. Names as GitHub and Pygments spell the common ones.
LANGUAGES = frozenset(
    """
    text txt plain plaintext output console terminal shell sh bash zsh fish ksh csh tcsh
    powershell pwsh ps ps1 bat batch cmd shell-session shellsession sh-session
    python py python3 py3 pycon pytb ipython jupyter cython
    javascript js jsx mjs cjs node typescript ts tsx json jsonc json5 jsonl ndjson
    yaml yml toml ini cfg conf config properties env dotenv editorconfig
    xml html htm xhtml svg css scss sass less stylus markdown md mdx rst asciidoc adoc tex latex
    bibtex sql psql postgresql postgres plpgsql mysql sqlite plsql tsql graphql gql sparql cypher
    c h cpp c++ cc cxx hpp hxx objc objective-c objectivec objective-cpp cs csharp c# fsharp f#
    java kotlin kt kts scala sbt groovy gradle clojure clj cljs edn go golang rust rs zig nim
    crystal d v odin ruby rb erb rake gemspec php perl pl pm raku lua luau r rscript julia jl
    swift dart elixir ex exs heex erlang erl haskell hs purescript elm ocaml ml mli reason
    lisp elisp emacs-lisp common-lisp scheme racket fortran f90 cobol pascal delphi ada vb vbnet
    vba matlab octave wolfram mathematica sas stata awk sed jq regex diff patch udiff
    dockerfile docker containerfile makefile make mk cmake ninja bazel starlark bzl meson nix
    nginx apache apacheconf caddyfile haproxy systemd http https-request curl proto protobuf
    thrift avro capnp terraform tf tfvars hcl bicep puppet ansible jinja jinja2 j2 django
    liquid handlebars hbs mustache twig ejs pug haml slim vue svelte astro solidity sol vyper
    verilog systemverilog sv vhdl asm nasm gas armasm llvm wasm wat cuda opencl glsl hlsl
    csv tsv log logs mermaid plantuml puml dot graphviz gherkin cucumber feature robot
    applescript autohotkey ahk prisma kql promql logql rego cue dhall jsonnet pkl smithy
    openapi swagger xquery xslt xpath vim vimscript viml lean coq agda idris prolog tla
    """.split()
)

_md = MarkdownIt(
    "commonmark",
    {
        "html": False,
        "linkify": False,
        "typographer": False,
        "breaks": True,
        # A reference link's token names its definition, and each definition is a token (with
        # its source lines), so reference-link surplus can be told from definitions in use.
        "store_labels": True,
        "inline_definitions": True,
    },
)
_md.enable(["table", "strikethrough"])
# An image would make the reviewer's browser load a URL the proposal chose: ![alt](url) stays a
# "!" followed by an ordinary (checked) link.
_md.disable("image")


def _fence_info(token: Token) -> str:
    """A fence's info string as the renderer reads it (entities and escapes decoded, trimmed)."""
    return mdTrim(unescapeAll(token.info)) if token.info else ""


def _render_fence(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: Any
) -> str:
    """The code block as markdown-it renders it, after its info string as a visible label."""
    info = _fence_info(tokens[idx])
    label = f'<p class="{FENCE_INFO_CLASS}">{escapeHtml(info)}</p>\n' if info else ""
    return label + RendererHTML.fence(renderer, tokens, idx, options, env)


def _render_nothing(
    _renderer: RendererHTML, _tokens: Sequence[Token], _idx: int, _options: OptionsDict, _env: Any
) -> str:
    return ""


_md.add_render_rule("fence", _render_fence)
# A link reference definition shows nothing itself: its destination shows after the links using it.
_md.add_render_rule("definition", _render_nothing)

_cleaner = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    clean_content_tags={"script", "style"},
    attributes={"a": {"href"}, "ol": {"start"}},
    url_schemes=set(ALLOWED_SCHEMES),
    url_relative="deny",
    link_rel=LINK_REL,
    strip_comments=True,
    allowed_classes={"p": {FENCE_INFO_CLASS}},
    # nh3 keeps title and lang on every tag whatever ``attributes`` says: a title is text the
    # page hides (shown only on hover), so both go.
    attribute_filter=lambda _element, attribute, value: None if attribute in ("title", "lang") else value,
)

# Estimated microseconds per character (measured on one shared core, rounded up): most text
# costs little; these cost more.
_COSTLY = {"[": 20, "\n": 20, "*": 12, "_": 12, "]": 4, "<": 4, "&": 4, "!": 3, "#": 3, "\\": 3, ":": 3}
# The estimated work one page may spend on Markdown (about 60 ms; a real proposal needs a tenth).
PAGE_BUDGET = 60_000


def cost(text: str) -> int:
    """An upper estimate of ``render``'s work for ``text``, in microseconds."""
    return len(text) + sum(weight * text.count(char) for char, weight in _COSTLY.items())


# A start or end tag of the sanitizer's output (attribute values are quoted), or a run of text.
_TAG = re.compile(r"""<(?:[^>"']|"[^"]*"|'[^']*')*>""")


@dataclass(frozen=True)
class Rendered:
    """Sanitized HTML (safe to insert as is), the flag kinds its text holds (marked characters,
    ``HIDDEN_TEXT``) and, when text is hidden, the source lines that hold it."""

    html: str
    kinds: frozenset[str]
    hidden: tuple[str, ...] = ()


def _mark_text(text: str, marker: Callable[[Mark], str]) -> str:
    # ``text`` is already HTML (entities escaped); only the marked characters are replaced.
    return "".join(piece if isinstance(piece, str) else marker(piece) for piece in pieces(text))


_WORD = re.compile(r"[^\W_]+")
# Lines as markdown-it counts them (its token maps index these).
_NEWLINE = re.compile(r"\r\n?|\n")
# A named character reference: its name is not a word of the text when it stands for a symbol.
_NAMED_ENTITY = re.compile(r"&[A-Za-z][A-Za-z0-9]{1,31};")
HIDDEN_LINES = 20


def _symbol_entity(match: re.Match[str]) -> str:
    decoded = html_lib.unescape(match.group())
    return " " if decoded != match.group() and not _WORD.search(decoded) else match.group()


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(_NAMED_ENTITY.sub(_symbol_entity, text)))


@dataclass
class _Accounting:
    """What one walk over the tokens found: text the page shows twice or from elsewhere, and the
    source lines of constructs that hide text.

    ``appended``: destinations shown after links (the page's text holds them; they are counted
    through ``credits`` instead, once per time the source writes them). ``credits``: source text
    the page shows outside the HTML text or away from where it is written (list numbers, link
    destinations, a used definition's label). ``lines``: indexes of flagged source lines."""

    appended: list[str] = field(default_factory=list)
    credits: list[str] = field(default_factory=list)
    lines: set[int] = field(default_factory=set)

    def flag(self, span: Sequence[int] | None, line_count: int) -> None:
        start, end = (span[0], span[1]) if span else (0, line_count)
        self.lines.update(range(start, max(end, start + 1)))


def _title_lines(titles: list[str], span: Sequence[int] | None, lines: list[str]) -> list[int]:
    """The lines of a block (``span``) that hold its inline links' ``titles``: those sharing a
    word with them (all of the block's lines if the titles have no word). One pass over the
    block, however many titles it holds."""
    start, end = (span[0], span[1]) if span else (0, len(lines))
    block = range(start, min(end, len(lines)))
    words = set(_WORD.findall(" ".join(titles)))
    found = [i for i in block if words and not words.isdisjoint(_WORD.findall(lines[i]))]
    return found or list(block)


def _account(tokens: list[Token], lines: list[str]) -> _Accounting:
    """Show each link's destination after it (unless the text already is the destination) and
    drop link titles, in place; find what the page shows twice or hides (``_Accounting``)."""
    found = _Accounting()
    used: set[str] = set()  # reference labels (normalized) some link uses
    definitions: list[Token] = []
    for token in tokens:
        if token.type == "list_item_open" and token.info:
            found.credits.append(token.info)  # an ordered list's number, drawn by the browser
        elif token.type == "definition":
            definitions.append(token)
        elif token.type == "fence":
            info = _fence_info(token)
            if info and info.lower() not in LANGUAGES:
                found.flag((token.map[0], token.map[0] + 1) if token.map else None, len(lines))
        if token.children is None:
            continue
        children: list[Token] = []
        opened: list[tuple[Token, str, list[str]]] = []
        titles: list[str] = []
        for child in token.children:
            children.append(child)
            if child.type == "link_open":
                title = child.attrs.pop("title", None)
                label = child.meta.get("label") if child.meta else None
                if title and not label:  # a reference's title is flagged at its definition
                    titles.append(str(title))
                opened.append((child, _md.normalizeLinkText(str(child.attrs.get("href", ""))), []))
            elif opened and child.type in ("text", "code_inline"):
                opened[-1][2].append(child.content)
            elif child.type == "link_close" and opened:
                link, destination, texts = opened.pop()
                if not destination:
                    continue
                if "".join(texts).strip() != destination:
                    shown = Token("text", "", 0)
                    shown.content = f" ({destination})"
                    children.append(shown)
                    found.appended.append(destination)
                if link.markup in ("autolink", "linkify"):
                    continue  # written once, as the link's text
                label = link.meta.get("label") if link.meta else None
                if label is None:
                    found.credits.append(destination)  # written in the link itself
                elif label not in used:
                    used.add(str(label))
                    found.credits.append(destination)  # written once, in the definition
        token.children = children
        if titles:
            found.lines.update(_title_lines(titles, token.map, lines))
    defined: set[str] = set()
    for definition in definitions:
        meta = definition.meta or {}
        name = str(meta.get("id", ""))
        if name in defined or name not in used:
            found.flag(definition.map, len(lines))  # surplus: repeated, or no link uses it
        else:
            found.credits.append(str(meta.get("label", "")))
            if meta.get("title"):
                found.flag(definition.map, len(lines))
        defined.add(name)
    return found


def _parse(text: str) -> tuple[str, tuple[str, ...]]:
    """``text``'s sanitized HTML (before marking) and the source lines holding hidden text."""
    env: dict[str, Any] = {}
    tokens = _md.parse(text, env)
    lines = _NEWLINE.split(text)
    found = _account(tokens, lines)
    html = _cleaner.clean(_md.renderer.render(tokens, _md.options, env))
    visible = _words(html_lib.unescape(_TAG.sub(" ", html)))
    shown = visible - _words(" ".join(found.appended)) + _words(" ".join(found.credits))
    flagged = {i for i in found.lines if i < len(lines)}
    # Words missing beyond those of the lines already flagged by construct: their lines too.
    missing = _words(text) - shown - _words("\n".join(lines[i] for i in flagged))
    if missing:
        holding = {i for i, line in enumerate(lines) if any(word in missing for word in _words(line))}
        flagged.update(holding or {i for i, line in enumerate(lines) if line.strip()})
    hidden = tuple(lines[i] for i in sorted(flagged))
    if len(hidden) > HIDDEN_LINES:
        more = len(hidden) - HIDDEN_LINES
        hidden = (
            *hidden[:HIDDEN_LINES],
            f"… and {more} more line{'s' if more > 1 else ''}: open Raw to read them",
        )
    return html, hidden


def hidden_text(text: str) -> tuple[str, ...]:
    """The source lines of ``text`` holding text its rendered Markdown does not show (empty:
    everything shows). Used where a page is not rendered, such as bulk approval."""
    return _parse(text)[1]


def render(text: str, marker: Callable[[Mark], str]) -> Rendered:
    """``text`` as sanitized Markdown HTML whose marked characters are ``marker(mark)`` (which
    must return HTML holding no marked character)."""
    html, hidden = _parse(text)
    flags = frozenset({HIDDEN_TEXT}) if hidden else frozenset()
    if not has_marks(html):
        return Rendered(html=html, kinds=flags, hidden=hidden)
    kinds: set[str] = set(flags)
    out: list[str] = []
    position = 0
    for tag in _TAG.finditer(html):
        chunk = html[position : tag.start()]
        if chunk:
            kinds.update(kinds_in(chunk))
            out.append(_mark_text(chunk, marker))
        # Tags keep their characters: the only attribute values left are hrefs, which the
        # renderer percent-encodes, ``start`` numbers and the fence label's fixed class.
        out.append(tag.group())
        position = tag.end()
    tail = html[position:]
    kinds.update(kinds_in(tail))
    out.append(_mark_text(tail, marker))
    return Rendered(html="".join(out), kinds=frozenset(kinds), hidden=hidden)
