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
