# Copyright: specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aar-doc, with the semantic markup its Markdown filter does not know rendered as ansible-doc renders it.

aar-doc 2.4.0 turns C(), I(), B(), M(), O(), V(), U(), L() and R() into Markdown, but leaves P(name#type) and, through
a copy-paste slip in its patterns, E() and RV() as they are. The argument specs use P() for the collection's roles and
plugins, so the READMEs would show ``P(specdec.bench.id#test)``. Same arguments as ``aar-doc``.
"""
from __future__ import annotations

import re
import sys

from aar_doc import cli, core

_AAR_DOC_MARKUP = core.ansible_doc_markup


def ansible_doc_markup(text: str) -> str:
    """P(fqcn#type) -> `fqcn` (type), E(x) and RV(x) -> `x`, then aar-doc's own rules."""
    text = re.sub(r"\bP\(([^#)]+)#([\w-]+)\)", r"`\1` (\2)", text)
    text = re.sub(r"\b(?:E|RV)\(((?:[^\\)]+|\\.)+)\)", r"`\1`", text)
    return _AAR_DOC_MARKUP(text)


# render_content looks the filter up in aar_doc.core each time it runs
core.ansible_doc_markup = ansible_doc_markup

if __name__ == "__main__":
    sys.argv[0] = "aar-doc"
    sys.exit(cli.app())
