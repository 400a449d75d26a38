"""The metric names a Grafana dashboard's PromQL queries read, and the names a live
``/metrics`` exports, so a test can hold the dashboard to the daemon.

:func:`promql_names` reads one PromQL expression: every metric name it selects (functions,
aggregations, keywords, label matchers, label values, range and subquery brackets,
durations, numbers and Grafana variables are not names) and the labels of its grouping
clauses (``by``/``without``/``on``/``ignoring``/``group_left``/``group_right``). A name
selected as ``{__name__="x"}`` counts too. Histogram series keep their suffix
(``x_bucket``); :func:`exported_names` lists a histogram family under its series names
(``x_bucket``, ``x_sum``, ``x_count``), so the two meet on what Prometheus stores.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

# aggregation operators and keywords: never metric names, whether or not "(" follows
_NOT_NAMES = frozenset({
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
    "and", "or", "unless", "atan2", "inf", "nan", "start", "end",
})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"([^"]+)"')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)")
_MATCHERS = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GRAFANA_VAR = re.compile(r"\$(?:\{[^}]*\}|\w+)")
_IDENT = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(\s*\()?")
_LABEL_VALUES = re.compile(r"^\s*label_values\s*\((.*),\s*(\w+)\s*\)\s*$", re.S)
_HISTOGRAM_SERIES = ("_bucket", "_sum", "_count", "_created")
_SUMMARY_SERIES = ("", "_sum", "_count", "_created")


@dataclass(frozen=True)
class Query:
    where: str                      # panel title and refId, or the templating variable
    expr: str
    names: frozenset[str]
    labels: frozenset[str]          # of its grouping clauses


def promql_names(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, grouping labels) of one PromQL expression."""
    names = set(_NAME_MATCHER.findall(expr))
    text = _STRING.sub('""', expr)                 # label values: "a{b}" is not a selector
    text = _GRAFANA_VAR.sub("", text)
    labels: set[str] = set()
    for group in _GROUPING.findall(text):
        labels.update(x.strip() for x in group.split(",") if x.strip())
    text = _GROUPING.sub(" ", text)
    text = _MATCHERS.sub(" ", text)
    while _BRACKETS.search(text):                  # ranges, subqueries [5m:1m]
        text = _BRACKETS.sub(" ", text)
    for m in _IDENT.finditer(text):
        word, call = m.group(1), m.group(2)
        if call or word in _NOT_NAMES:
            continue
        names.add(word)
    return names, labels


def dashboard_queries(dashboard: dict) -> Iterator[Query]:
    """Every query of a dashboard: each panel's targets (rows' nested panels too) and the
    templating variables' ``label_values(metric, label)`` / ``query_result(expr)``."""
    def panels(items: list[dict]) -> Iterator[dict]:
        for p in items:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dashboard.get("panels", [])):
        for t in p.get("targets", []):
            expr = t.get("expr", "")
            if expr:
                names, labels = promql_names(expr)
                yield Query(f"panel {p.get('title')!r} query {t.get('refId')}", expr,
                            frozenset(names), frozenset(labels))
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var.get("query")
        text = q.get("query", "") if isinstance(q, dict) else str(q or "")
        m = _LABEL_VALUES.match(text)
        inner = m.group(1) if m else re.sub(r"^\s*query_result\s*\((.*)\)\s*$", r"\1", text)
        names, labels = promql_names(inner)
        if m:
            labels.add(m.group(2))
        yield Query(f"variable {var.get('name')!r}", text, frozenset(names), frozenset(labels))


@dataclass
class Exported:
    """What one ``/metrics`` text declares: series names, and the labels seen per series."""

    names: set[str] = field(default_factory=set)
    labels: dict[str, set[str]] = field(default_factory=dict)


def exported_names(text: str) -> Exported:
    """The series names a Prometheus text exposition declares (``# TYPE`` families, with a
    histogram's or summary's series names) or carries samples of, and their labels."""
    out = Exported()
    for family in text_string_to_metric_families(text):
        if family.type == "histogram":
            out.names.update(family.name + s for s in _HISTOGRAM_SERIES)
        elif family.type == "summary":
            out.names.update(family.name + s for s in _SUMMARY_SERIES)
        elif family.type == "counter":
            out.names.update((family.name + "_total", family.name + "_created"))
        else:
            out.names.add(family.name)
        for sample in family.samples:
            out.names.add(sample.name)
            out.labels.setdefault(sample.name, set()).update(sample.labels)
    return out


def missing(queries: list[Query], exported: Exported) -> list[str]:
    """One line per query naming a metric the exposition does not export."""
    return [f"{q.where}: {sorted(q.names - exported.names)} not exported ({q.expr})"
            for q in queries if q.names - exported.names]


def unknown_labels(queries: list[Query], exported: Exported,
                   added_by_prometheus: frozenset[str] = frozenset({"instance", "job"})
                   ) -> list[str]:
    """One line per query grouping by a label none of its metrics' samples carry
    (``le`` counts for ``_bucket`` series; Prometheus adds ``instance`` and ``job``).
    A query none of whose metrics has a sample yet is not judged (the exposition names no
    labels without samples): see :func:`without_samples`."""
    problems = []
    for q in without_samples(queries, exported, invert=True):
        seen: set[str] = set(added_by_prometheus)
        for name in q.names:
            seen |= exported.labels.get(name, set())
        bad = q.labels - seen
        if bad:
            problems.append(f"{q.where}: groups by {sorted(bad)}, which {sorted(q.names)} "
                            f"do not carry ({q.expr})")
    return problems


def without_samples(queries: list[Query], exported: Exported, *, invert: bool = False
                    ) -> list[Query]:
    """The queries none of whose metrics has a sample (``invert``: those with one)."""
    return [q for q in queries
            if any(name in exported.labels for name in q.names) == invert]
