"""The PvP table's first rows as plain HTML in the served page (`leaderboard.first_rows.FirstRows`):
what a browser shows before Gradio's script starts. Pure functions, no browser (that is
`tests/test_ui.py::test_the_first_rows_come_in_the_pages_html_until_gradios_table_has_them`)."""

from __future__ import annotations

import math

from leaderboard.first_rows import cell_html, inserted, table_html


def test_markdown_cells_are_links_and_markup_anywhere_is_text():
    cell = cell_html("[alice/x](http://hub.example/alice/x)@[abc1234](/?policy=alice/x@abc1234)", "markdown")
    assert cell == '<a href="http://hub.example/alice/x">alice/x</a>@<a href="/?policy=alice/x@abc1234">abc1234</a>'
    assert cell_html("<img src=x onerror=alert(1)> [a](/?p=1)", "markdown") == \
        '&lt;img src=x onerror=alert(1)&gt; <a href="/?p=1">a</a>'
    assert cell_html("[a](javascript:alert(1))", "markdown") == "[a](javascript:alert(1))"  # no script link
    assert cell_html("<b>1-1</b>", "str") == "&lt;b&gt;1-1&lt;/b&gt;"
    assert cell_html(math.nan, "number") == "" and cell_html(None, "str") == ""
    assert cell_html(28.06, "number") == "28.06"


def test_a_table_is_its_headers_and_rows_in_order_and_nothing_without_rows():
    props = {"value": {"headers": ["Rank", "Policy", "MLE"], "data": [[1, "[a/b](/?policy=a/b)", 2.5], [2, "c/d", math.nan]]},
             "datatype": ["number", "markdown", "number"]}
    table = table_html(props)
    assert table.startswith("<table><thead><tr><th>Rank</th><th>Policy</th><th>MLE</th></tr></thead><tbody>")
    assert table.index('<a href="/?policy=a/b">a/b</a>') < table.index("c/d")
    assert '<td class="n"></td></tr></tbody></table>' in table  # the missing number: empty
    assert table_html({"value": {"headers": ["Rank"], "data": []}}) == ""
    assert table_html({}) == ""
    mismatched = table_html({"value": {"headers": ["A", "B"], "data": [["<i>", "[x](/y)"]]}, "datatype": ["str"]})
    assert "&lt;i&gt;" in mismatched and "[x](/y)" in mismatched  # kinds that do not fit the columns: all text


def test_the_block_goes_first_in_the_body_of_the_page():
    page = b'<html><head><style>body{}</style></head><body\n style="margin: 0">\n<gradio-app></gradio-app></body></html>'
    assert inserted(page, "<div>rows</div>") == \
        b'<html><head><style>body{}</style></head><body\n style="margin: 0"><div>rows</div>\n<gradio-app></gradio-app></body></html>'
    assert inserted(b"not a page", "<div>rows</div>") == b"not a page"


def test_a_page_whose_first_rows_fail_is_served_without_them(caplog):
    """`with_first_rows`: the page goes as Gradio made it, the failure in the log."""
    import asyncio

    from leaderboard.first_rows import with_first_rows

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    def broken() -> str:
        raise KeyError("components")

    page = b"<html><head></head><body><gradio-app></gradio-app></body></html>"
    sending = with_first_rows(send, broken)

    async def answer() -> None:
        await sending({"type": "http.response.start", "status": 200,
                       "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(page)).encode())]})
        await sending({"type": "http.response.body", "body": page})

    asyncio.run(answer())
    assert sent[-1]["body"] == page and (b"content-length", str(len(page)).encode()) in sent[0]["headers"]
    assert "could not be drawn into the page (KeyError" in caplog.text


def test_the_page_gets_its_first_rows_and_its_length_and_nothing_else_is_touched():
    import asyncio

    from leaderboard.first_rows import with_first_rows

    def answered(kind: bytes, body: bytes, status: int = 200) -> list[dict]:
        sent: list[dict] = []

        async def send(message):
            sent.append(message)

        sending = with_first_rows(send, lambda: "<div>rows</div>")

        async def answer() -> None:
            await sending({"type": "http.response.start", "status": status,
                           "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())]})
            await sending({"type": "http.response.body", "body": body[:10], "more_body": True})
            await sending({"type": "http.response.body", "body": body[10:]})

        asyncio.run(answer())
        return sent

    page = b"<html><head></head><body><gradio-app></gradio-app></body></html>"
    sent = answered(b"text/html; charset=utf-8", page)
    whole = b"<html><head></head><body><div>rows</div><gradio-app></gradio-app></body></html>"
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"] and sent[1]["body"] == whole
    assert (b"content-length", str(len(whole)).encode()) in sent[0]["headers"]
    assert b"".join(m.get("body", b"") for m in answered(b"application/json", b'{"a": "<body>"}')) == b'{"a": "<body>"}'
    assert b"".join(m.get("body", b"") for m in answered(b"text/html", page, status=404)) == page
