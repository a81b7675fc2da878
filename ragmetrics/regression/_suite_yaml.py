"""Reading suite files as YAML without alias bombs.

PyYAML's ``safe_load`` shares an aliased value instead of copying it, so loading a "billion laughs"
document is cheap; whatever walks the value afterwards (json_match canonicalising an ``expected``
value, a report, a copy) meets every alias expanded, and 9 levels of 10 aliases in a 1 KB file become
10**9 nodes. :func:`load_yaml` measures the expanded size of the composed document before building it
and refuses one whose aliases add more than :data:`MAX_ALIAS_NODES` nodes, or that refers to itself;
ordinary reuse (an anchored list of evaluators used by a few cases) stays well under the bound.

PyYAML is imported only when a YAML suite is read.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.errors import ConfigError

__all__ = ["MAX_ALIAS_NODES", "load_yaml"]

MAX_ALIAS_NODES = 10_000
"""How many nodes aliases may add to a suite document once expanded (beyond those written out)."""


def _expanded_size(root: Any, source: str) -> tuple[int, int]:
    """(expanded node count, distinct node count) of a composed YAML node graph.

    Raises:
        ConfigError: A node contains itself (a recursive alias).
    """
    import yaml

    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:  # iterative post-order walk: deep documents cannot exhaust the Python stack
        node, done = stack.pop()
        key = id(node)
        if done:
            children = _children(node, yaml)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            active.discard(key)
            continue
        if key in sizes:
            continue
        active.add(key)
        stack.append((node, True))
        for child in _children(node, yaml):
            if id(child) in active:  # the child is one of this node's ancestors
                mark = getattr(child, "start_mark", None)
                where = f" (the value anchored at line {mark.line + 1})" if mark is not None else ""
                raise ConfigError(
                    f"{source}: a YAML alias refers to a value that contains it{where}; remove the loop"
                )
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)], len(sizes)


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text: str, source: str) -> Any:
    """Parse a YAML suite with the safe loader, refusing alias bombs and recursive aliases.

    Args:
        text: The file's text.
        source: The file, named in every message.

    Raises:
        ConfigError: Invalid YAML (with its line and column), aliases that expand past
            :data:`MAX_ALIAS_NODES` nodes, a recursive alias, or a document nested too deeply.
    """
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded, distinct = _expanded_size(node, source)
        if expanded - distinct > MAX_ALIAS_NODES:
            raise ConfigError(
                f"{source}: YAML aliases expand this document to {expanded:,} values, "
                f"{expanded - distinct:,} more than written out (the limit is {MAX_ALIAS_NODES:,}); "
                "this is how 'billion laughs' files exhaust memory: write the values out, or alias less"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}: invalid YAML{where}: {problem}") from exc
    except RecursionError as exc:
        raise ConfigError(f"{source}: the YAML is nested too deeply to read") from exc
    finally:
        loader.dispose()
