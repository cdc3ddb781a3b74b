# Copyright: specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""aar-doc, with the semantic markup its Markdown filter does not know rendered as ansible-doc renders it.

aar-doc 2.4.0 turns C(), I(), B(), M(), O(), V(), U(), L() and R() into Markdown, but leaves P(name#type) and, through
a copy-paste slip in its patterns, E() and RV() as they are. The argument specs use P() for the collection's roles and
plugins, so the READMEs would show ``P(specdec.bench.id#test)``. Same arguments as ``aar-doc``.

The generated block is the reference part of a README that also has hand-written parts (inject mode): its title
becomes ``## Reference: <role>`` under the README's own title, and its "Example Playbook" goes, since aar-doc's is not
valid YAML (``name: Importing role: ...``, an empty ``vars:``); each README has its own example outside the block.
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


_EXAMPLE = re.compile(r"^## Example Playbook\n\n```yaml\n.*?^```\n\n", re.MULTILINE | re.DOTALL)
_TITLE = re.compile(r"^# Ansible Role: (\S+)$", re.MULTILINE)
_AAR_DOC_RENDER = cli.render_content


def reference(content: str) -> str:
    """aar-doc's generated Markdown as the reference part of a README: titled one level down, without its example."""
    content = _TITLE.sub(r"## Reference: \1", content, count=1)
    return _EXAMPLE.sub("", content, count=1)


def render_content(ctx, content_template: str) -> str:
    """aar-doc's rendering, with the generated block made the README's reference part."""
    return reference(_AAR_DOC_RENDER(ctx, content_template))


# render_content looks the filter up in aar_doc.core each time it runs; the command calls cli.render_content
core.ansible_doc_markup = ansible_doc_markup
cli.render_content = render_content

if __name__ == "__main__":
    sys.argv[0] = "aar-doc"
    sys.exit(cli.app())
