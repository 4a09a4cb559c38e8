"""review.textmarks (pure) and its template filter/tags: every bidirectional control and invisible
character is found, split out and shown as a marker; nothing else is."""

from __future__ import annotations

import sys
import unicodedata
from itertools import pairwise

import pytest
from django.template import Context, Template
from hypothesis import given, settings
from hypothesis import strategies as st

from review.textmarks import BIDI, INVISIBLE, Mark, has_marks, kinds_in, pieces

BIDI_CONTROLS = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
# Issue 20, N5: every Default_Ignorable_Code_Point and every Cf, Zl and Zp character. The
# default-ignorable code points outside Cf, from Unicode's PropList.txt (Other_Default_Ignorable
# and Variation_Selector):
NOT_FORMAT_BUT_IGNORABLE = [
    0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x2065, 0x3164, 0xFFA0,
    *range(0xFE00, 0xFE10), *range(0xFFF0, 0xFFF9), *range(0xE0080, 0xE0100), *range(0xE0100, 0xE1000),
    0xE0000, *range(0xE0002, 0xE0020),
]  # fmt: skip
MARKED = {
    chr(c): INVISIBLE
    for c in range(sys.maxunicode + 1)
    if not 0xD800 <= c <= 0xDFFF
    and (unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp") or c in NOT_FORMAT_BUT_IGNORABLE)
} | {chr(c): BIDI for c in BIDI_CONTROLS}

RLO_CHAR = "\u202e"
DETERMINISTIC = settings(derandomize=True, database=None, deadline=None, max_examples=300)


def test_the_brief_s_characters_are_all_marked_with_their_kind() -> None:
    required_bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    required_zero_width = "\u200b\u200c\u200d\u2060\ufeff"
    for char in required_bidi:
        assert kinds_in(char) == {BIDI}, f"U+{ord(char):04X}"
    for char in required_zero_width:
        assert kinds_in(char) == {INVISIBLE}, f"U+{ord(char):04X}"


def test_exactly_the_listed_code_points_are_marked() -> None:
    # Every code point, once: the set of marked ones is exactly MARKED, with the right kinds.
    found = {}
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        if has_marks(char):
            (piece,) = pieces(char)
            assert isinstance(piece, Mark)
            found[char] = piece.kind
    assert found == MARKED


@pytest.mark.parametrize(
    "char",
    [
        "a",
        " ",
        "\n",
        "\t",
        "\u00a0",  # no-break space: visible width, no direction
        "\u202f",  # narrow no-break space, next to the bidi block
        "\u05d0",  # Hebrew alef: right-to-left by itself, not a control
        "\u0627",  # Arabic alef
        "漢",
        "😀",
    ],
)
def test_ordinary_text_including_right_to_left_letters_is_not_marked(char: str) -> None:
    assert not has_marks(char)
    assert kinds_in(char) == frozenset()
    assert pieces(char) == [char]


def test_pieces_split_runs_and_marks_in_order() -> None:
    text = "pay \u202eevil\u202c now\u200b\u200b"

    assert pieces(text) == [
        "pay ",
        Mark("\u202e"),
        "evil",
        Mark("\u202c"),
        " now",
        Mark("\u200b"),
        Mark("\u200b"),
    ]
    assert kinds_in(text) == {BIDI, INVISIBLE}
    assert pieces("") == []


def test_a_mark_names_its_code_point() -> None:
    assert Mark("\u202e").code == "U+202E"
    assert Mark("\u202e").name == "RIGHT-TO-LEFT OVERRIDE"
    assert Mark("\u061c").code == "U+061C"
    assert Mark("\U000e0041").code == "U+E0041"
    assert Mark("\U000e0041").name == unicodedata.name("\U000e0041")


text_with_marks = st.lists(st.one_of(st.sampled_from(sorted(MARKED)), st.text(max_size=5)), max_size=20).map(
    "".join
)


@DETERMINISTIC
@given(text_with_marks)
def test_pieces_give_the_text_back_and_isolate_every_mark(text: str) -> None:
    parts = pieces(text)

    assert "".join(p if isinstance(p, str) else p.char for p in parts) == text
    for part in parts:
        if isinstance(part, str):
            assert part and not has_marks(part)
        else:
            assert part.char in MARKED and part.kind == MARKED[part.char]
    # Runs of text are maximal: two strings never follow each other.
    assert not any(isinstance(a, str) and isinstance(b, str) for a, b in pairwise(parts))
    assert has_marks(text) == any(isinstance(p, Mark) for p in parts)
    assert kinds_in(text) == {p.kind for p in parts if isinstance(p, Mark)}


# --- the template filter and tags ------------------------------------------------------------


def render(source: str, **context: object) -> str:
    return Template("{% load textmarks %}" + source).render(Context(context))


def test_the_filter_escapes_everything_and_shows_marks_as_markers() -> None:
    html = render("{{ value|textmarks }}", value="<b>a</b>\u202e&\u200b")

    assert html == (
        "&lt;b&gt;a&lt;/b&gt;"
        '<span class="textmark textmark-bidi" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>'
        "&amp;"
        '<span class="textmark textmark-invisible" title="U+200B ZERO WIDTH SPACE">⟨U+200B⟩</span>'
    )


@DETERMINISTIC
@given(text_with_marks)
def test_the_filter_never_lets_a_marked_character_or_markup_through(text: str) -> None:
    html = render("{{ value|textmarks }}", value=text)

    assert not has_marks(html)
    assert "<" not in html.replace('<span class="textmark', "").replace("</span>", "")


def test_the_filter_shows_none_as_nothing() -> None:
    assert render("{{ value|textmarks }}", value=None) == ""


def test_the_guard_names_every_labelled_field_that_holds_marks_once() -> None:
    html = render(
        '{% textmarks_guard %}{% marked a "Proposal" "Lesson" %}|{% marked b "Reason" %}|'
        '{% marked c "Evidence" "" "src" %}|{% marked a "Proposal" "Lesson" %}{% endtextmarks_guard %}',
        a="x\u202ey",
        b="plain",
        c="z\u200b",
    )

    banner, _, body = html.partition("</div>")
    assert "data-textmarks-warning" in banner
    assert "<b>Proposal · Lesson</b>: bidirectional control characters" in banner
    assert "<b>Evidence · src</b>: zero-width or invisible characters" in banner
    assert banner.count("data-textmarks-field") == 2 and "Reason" not in banner
    assert body.count("⟨U+202E⟩") == 2 and "⟨U+200B⟩" in body and "plain" in body
    assert not has_marks(html)


def test_the_guard_adds_nothing_when_no_field_holds_marks() -> None:
    html = render('{% textmarks_guard %}{% marked a "Reason" %}{% endtextmarks_guard %}', a="<plain>")

    assert html == "&lt;plain&gt;"


def test_a_label_with_marks_is_itself_shown_with_markers() -> None:
    html = render(
        '{% textmarks_guard %}{% marked a "Evidence" src %}{% endtextmarks_guard %}',
        a="\u2066",
        src="s\u202e",
    )

    assert "<b>Evidence · s" in html and not has_marks(html)


def test_diff_rows_escape_every_cell_and_mark_hidden_characters() -> None:
    from review.diff import fields_diff

    old = "\n".join(["same"] * 8 + ["<b>old</b> text", "gone"])
    new = "\n".join(["same"] * 8 + [f"<b>new</b>{RLO_CHAR} text"])
    (diff,) = fields_diff([("lesson", "Lesson")], {"lesson": old}, {"lesson": new})

    html = render(
        '{% load review_diff %}{% textmarks_guard %}{% diff_rows diff left="Before" right="After" where="Diff" %}'
        "{% endtextmarks_guard %}",
        diff=diff,
    )

    assert not has_marks(html) and "<b>old" not in html and "<b>new" not in html
    assert '<tr class="skip"><td colspan="4">⋯ 5 unchanged lines</td></tr>' in html
    assert (
        '<tr class="equal"><td class="ln">6</td><td class="l">same</td><td class="ln">6</td><td class="r">same</td></tr>'
        in html
    )
    assert (
        '<tr class="replace"><td class="ln">9</td><td class="l">&lt;b&gt;<del>old</del>&lt;/b&gt; text</td>'
        '<td class="ln">9</td><td class="r">&lt;b&gt;<ins>new</ins>&lt;/b&gt;'
        '<ins><span class="textmark textmark-bidi" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span></ins>'
        " text</td></tr>"
    ) in html
    assert (
        '<tr class="delete"><td class="ln">10</td><td class="l"><del>gone</del></td><td class="ln"></td><td class="r"></td></tr>'
        in html
    )
    assert "<b>Diff · Lesson · After</b>: bidirectional control characters" in html
    assert "Diff · Lesson · Before" not in html


@pytest.mark.parametrize(
    "char",
    ["\u00ad", "\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u180e", "\u2028", "\u2029", "\u2065",
     "\ufe00", "\ufe0f", "\U000e0100", "\U000e01ef", "\U000e0001", "\U000e007f"],
)  # fmt: skip
def test_default_ignorable_and_separator_characters_are_marked(char: str) -> None:
    # N5: variation selectors can smuggle bytes a model decodes; fillers and separators draw nothing.
    assert has_marks(char)
    assert kinds_in("a" + char + "b") == {INVISIBLE}
