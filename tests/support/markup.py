"""Reading back HTML a view renders: balanced tags, their attributes and the text."""

from __future__ import annotations

from html.parser import HTMLParser


class Tags(HTMLParser):
    """Checks the HTML is balanced and records tag names and attributes."""

    VOID = {"br", "hr", "img", "meta", "input", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}> in {self.stack}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse_html(markup: str) -> Tags:
    p = Tags()
    p.feed(markup)
    p.close()
    assert p.stack == [], f"unclosed tags {p.stack}"
    return p
