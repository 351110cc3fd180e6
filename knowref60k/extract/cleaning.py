"""Turn a raw Reddit body into plain prose paragraphs, or say why the comment is dropped."""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from knowref60k.core.paths import DATA_DIR

PLACEHOLDER_BODIES = {"[deleted]": "deleted", "[removed]": "removed"}

_FENCED_CODE = re.compile(r"^[ \t]*```.*?(?:^[ \t]*```[^\n]*$|\Z)", re.M | re.S)
_INDENTED_CODE = re.compile(r"^(?: {4}|\t).*$", re.M)
_QUOTE_LINE = re.compile(r"^[ \t]*>.*$", re.M)
_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*(?:\s+\"[^\"\n]*\")?\)")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.I)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_EMPHASIS = re.compile(r"(\*{1,3}|~~|__)(?=\S)(.+?)(?<=\S)\1")
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+", re.M)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# C0 and C1 control characters and DEL, except those that are whitespace (tab, newlines, separators).
_CONTROL_CHARACTERS = r"\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f"
_CONTROL = re.compile(f"[{_CONTROL_CHARACTERS}]")
# What the steps of `clean_text` look for before they remove something that may stand between two
# letters of ASCII text: an entity, code, emphasis, a link target, a URL, a control character. A new
# step that removes text must be added here too (`may_join_letters`, which the extraction screen trusts).
_JOINING_CHARACTERS = re.compile(f"[&`*{_CONTROL_CHARACTERS}]")
_BOT_SUFFIX = re.compile(r"(?:Bot|BOT|[_-][Bb]ot)$")

# Typographic characters are mapped to their plain forms rather than deleted, so words stay intact.
_PLAIN_FORMS = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u00b4": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u2013": "-",
    "\u2014": " - ",
    "\u2212": "-",
    "\u200b": "",
    "\u200c": "",
    "\u200d": "",
    "\u2060": "",
    "\ufeff": "",
}
# The characters found by one regex and replaced one by one: str.translate looks every character of a
# text up in its table, several times slower on the non-ASCII bodies of a dump, which hold few of them.
_TYPOGRAPHIC = re.compile(f"[{''.join(map(re.escape, _PLAIN_FORMS))}]")


@lru_cache(maxsize=4)
def load_bot_names(path: Path = DATA_DIR / "bots" / "bots.txt") -> frozenset[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip().lower() for line in lines if line.strip() and not line.startswith("#"))


def is_bot(author: str | None, bot_names: frozenset[str]) -> bool:
    if not author:
        return False
    return author.lower() in bot_names or bool(_BOT_SUFFIX.search(author))


def normalise_unicode(text: str) -> str:
    """Curly quotes, dashes and compatibility forms to plain ones; invisible and control characters
    (NUL, DEL, ...; whitespace aside) removed."""
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    if text.isascii():
        return text
    plain = _TYPOGRAPHIC.sub(_plain_form, text)
    return unicodedata.normalize("NFKC", plain)


def _plain_form(match: re.Match[str]) -> str:
    return _PLAIN_FORMS[match.group()]


def may_join_letters(text: str) -> bool:
    """Whether `clean_text` might remove something from between two letters of this ASCII text. When
    not, every word it leaves is a word of the text, between the same kind of neighbours: whole quoted
    or indented lines and heading marks go with the whitespace around them."""
    # The marks one by one: a quarter faster than any() over a tuple of them, on every comment of a dump.
    return (
        _JOINING_CHARACTERS.search(text) is not None
        or "~~" in text
        or "__" in text
        or "](" in text
        or "http" in text
        or "www." in text
    )


def strip_markdown(text: str) -> str:
    """Remove what is not the author's prose: code, quotes of other comments, URLs; keep link texts."""
    if "`" in text:
        text = _FENCED_CODE.sub("", text)
        text = _INLINE_CODE.sub("", text)
    if "    " in text or "\t" in text:
        text = _INDENTED_CODE.sub("", text)
    if ">" in text:
        text = _QUOTE_LINE.sub("", text)
    if "](" in text:
        text = _MARKDOWN_LINK.sub(r"\1", text)
    if "http" in text or "www." in text:
        text = _URL.sub("", text)
    if "*" in text or "~~" in text or "__" in text:
        text = _EMPHASIS.sub(r"\2", text)
    if "#" in text:
        text = _HEADING.sub("", text)
    return text


def clean_text(body: str) -> list[str]:
    """A raw body as a list of cleaned paragraphs with single spaces inside."""
    if "&" in body:
        # Pushshift escapes twice in places ("&amp;#x200B;"); a second pass is harmless on plain text.
        body = html.unescape(html.unescape(body))
    body = normalise_unicode(body)
    body = strip_markdown(body.replace("\r\n", "\n"))
    parts = _PARAGRAPH_BREAK.split(body) if "\n" in body else [body]
    # str.split() splits on exactly the characters `\s` matches, and is three times faster than re.sub.
    paragraphs = (" ".join(part.split()) for part in parts)
    return [paragraph for paragraph in paragraphs if paragraph]
