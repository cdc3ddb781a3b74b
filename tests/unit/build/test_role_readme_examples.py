"""Every role README: hand-written parts around the generated reference, and examples that parse and use the role."""
import pathlib
import re

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
ROLES = sorted(p.parent for p in (REPO / "roles").glob("*/README.md"))
YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def roles_used(node):
    """Every role named in a play or task list: roles: entries and import_role/include_role names."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "roles" and isinstance(value, list):
                for entry in value:
                    yield entry.get("role", entry.get("name")) if isinstance(entry, dict) else entry
            elif key in ("ansible.builtin.import_role", "ansible.builtin.include_role", "import_role", "include_role"):
                yield value.get("name")
            yield from roles_used(value)
    elif isinstance(node, list):
        for item in node:
            yield from roles_used(item)


def test_every_role_has_a_readme():
    assert {p.name for p in ROLES} == {p.name for p in (REPO / "roles").iterdir() if p.is_dir()}


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_examples_parse_and_use_the_role_by_fqcn(role):
    text = (role / "README.md").read_text(encoding="utf-8")
    blocks = YAML_BLOCK.findall(text)
    assert blocks, f"roles/{role.name}/README.md has no yaml example"
    for block in blocks:
        plays = yaml.safe_load(block)
        assert isinstance(plays, list) and plays, block
        assert f"specdec.bench.{role.name}" in set(roles_used(plays)), block


@pytest.mark.parametrize("role", ROLES, ids=lambda p: p.name)
def test_hand_written_introduction_and_example_outside_the_generated_block(role):
    text = (role / "README.md").read_text(encoding="utf-8")
    head, sep, rest = text.partition("<!-- BEGIN_ANSIBLE_DOCS -->\n")
    assert sep and "<!-- END_ANSIBLE_DOCS -->\n" in rest
    assert head.startswith(f"# Ansible Role: specdec.bench.{role.name}\n\n")
    intro = head.split("\n\n")[1]
    assert len(intro) > 80 and not intro.startswith("#")
    assert "## Example Playbook\n\n```yaml\n" in head
    generated = rest.partition("<!-- END_ANSIBLE_DOCS -->\n")[0]
    assert generated.startswith(f"## Reference: specdec.bench.{role.name}\n")
    assert "Example Playbook" not in generated
