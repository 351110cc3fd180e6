from knowref60k.core.config import ExtractConfig
from knowref60k.core.records import Comment
from knowref60k.extract.cleaning import clean_text, is_bot, load_bot_names, normalise_unicode
from knowref60k.extract.context import ExtractContext
from knowref60k.extract.stages.clean import Clean
from knowref60k.extract.stages.triage import Triage


def comment(body: str, author: str = "someone") -> Comment:
    return Comment(comment_id="c", body=body, line_number=1, author=author)


def test_html_entities_are_unescaped_even_when_escaped_twice() -> None:
    assert clean_text("Tom &amp; Jerry &gt; all&amp;#x200B;") == ["Tom & Jerry > all"]


def test_quotes_code_and_urls_are_removed_but_link_text_kept() -> None:
    body = (
        "&gt; quoted from the parent comment\n\n"
        "See [the article](https://example.com/a) or https://example.org/x now.\n\n"
        "```\ncode block\n```\n\n    indented code\n\nUse `inline code` here."
    )
    assert clean_text(body) == ["See the article or now.", "Use here."]


def test_paragraphs_split_on_blank_lines_and_whitespace_is_collapsed() -> None:
    assert clean_text("One  line\nwraps here.\n\n\nSecond   one.") == ["One line wraps here.", "Second one."]


def test_every_kind_of_whitespace_collapses_to_one_space() -> None:
    # Control separators and Unicode spaces that NFKC keeps (line and paragraph separators) count too.
    body = "One\t\x1c\x1dtwo\u2028three\u2029 four\x0b\x0cfive\r\n"
    assert clean_text(body) == ["One two three four five"]


def test_curly_quotes_become_plain_instead_of_being_deleted() -> None:
    assert (
        normalise_unicode("Dan\u2019s \u201cbest\u201d friend \u2013 Zo\u00eb")
        == 'Dan\'s "best" friend - Zoë'
    )


def test_typographic_forms_are_replaced_wherever_they_stand() -> None:
    # Quotes, primes, dashes and invisible characters, each twice between letters, after an accented
    # letter that keeps the text non-ASCII.
    forms = ["\u2018", "\u2032", "\u00b4", "\u201e", "\u2033", "\u2014", "\u2212", "\u200b", "\ufeff"]
    text = "é" + "".join(f"a{form}b{form}" for form in forms)
    plain = ["'", "'", "'", '"', '"', " - ", "-", "", ""]
    assert normalise_unicode(text) == "é" + "".join(f"a{form}b{form}" for form in plain)


def test_emphasis_markers_are_stripped() -> None:
    assert clean_text("He was **really** *that* ~~bad~~ good.") == ["He was really that bad good."]


def test_placeholders_bots_and_empty_bodies_are_dropped_with_reasons() -> None:
    context = ExtractContext(ExtractConfig(), model_name="not loaded by these stages")
    triage, cleaner = Triage(context), Clean(context)
    bodies = [
        ("[deleted]", "x"),
        ("[removed]", "x"),
        ("  ", "x"),
        ("I am a bot.", "AutoModerator"),
        ("Reminder!", "RemindMeBot"),
        ("https://example.com", "x"),
        ("Real text.", "Talbot"),
    ]
    paragraphs = list(cleaner.run(triage.run(comment(body, author) for body, author in bodies)))
    assert [(p.comment.author, p.index, p.text) for p in paragraphs] == [("Talbot", 0, "Real text.")]
    assert triage.stats.dropped == {"deleted": 1, "removed": 1, "empty": 1, "bot_author": 2}
    assert (triage.stats.total, triage.stats.forwarded) == (7, 2)
    assert cleaner.stats.dropped == {"empty_after_cleaning": 1}
    assert (cleaner.stats.total, cleaner.stats.forwarded) == (2, 1)


def test_bot_rule_is_case_sensitive_on_the_suffix() -> None:
    bots = load_bot_names()
    assert is_bot("automoderator", bots)
    assert is_bot("SomeHelperBot", bots) and is_bot("link_bot", bots)
    assert not is_bot("abbot", bots) and not is_bot("Talbot", bots) and not is_bot(None, bots)
