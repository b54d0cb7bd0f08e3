"""A page that leaves a code block unclosed before the next one opens ("```cpp" where "```"
belongs): the reader takes the opening fence as the start of a new block, so both prototypes are
read and the headings after the blocks stay headings."""

from __future__ import annotations

from aclnngen.codegen.importer.facts import PageFacts
from aclnngen.codegen.importer.markdown import _read_prototypes, sections

BODY = """\
```cpp
aclnnStatus aclnnDemoGetWorkspaceSize(const aclTensor* self, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)

```cpp
aclnnStatus aclnnDemo(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
```
"""


def test_both_prototypes_of_an_unclosed_block_pair_are_read():
    facts = PageFacts("made/up.md", "markdown")
    facts.op = "Demo"
    _read_prototypes(facts, BODY.splitlines(), None)
    assert facts.prototypes["get_workspace_size"].startswith("aclnnStatus aclnnDemoGetWorkspaceSize(")
    assert facts.prototypes["launch"].startswith("aclnnStatus aclnnDemo(void* workspace")


def test_a_heading_after_an_unclosed_block_is_a_heading():
    text = "## 函数原型\n\n" + BODY + "\n## aclnnDemoGetWorkspaceSize\n\n- 参数说明\n"
    assert [heading for heading, _ in sections(text)] == ["", "函数原型", "aclnnDemoGetWorkspaceSize"]
