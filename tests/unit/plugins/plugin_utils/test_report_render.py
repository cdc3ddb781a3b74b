# SPDX-License-Identifier: GPL-3.0-or-later
"""report_render: text from a host is data in report.md and report.tex, never markup."""
import pytest

from ansible_collections.specdec.bench.plugins.plugin_utils.report import latex_sections, markdown_sections


def test_tex_escape():
    assert latex_sections.tex_escape('a_b & 50% #1 {x}') == r'a\_b \& 50\% \#1 \{x\}'


@pytest.mark.parametrize(('text', 'md', 'tex'), [
    ('<script>alert(1)</script> | a & b', '&lt;script&gt;alert(1)&lt;/script&gt; \\| a &amp; b',
     r'\textless{}script\textgreater{}alert(1)\textless{}/script\textgreater{} \textbar{} a \& b'),
    ('a\\b\n`c` [d](e)', 'a\\\\b \\`c\\` \\[d\\](e)', r'a\textbackslash{}b `c` [d](e)'),
])
def test_markdown_and_tex_escaping(text, md, tex):
    assert markdown_sections.md_escape(text) == md
    assert latex_sections.tex_escape(text) == tex
