"""The server-rendered parts of the HTML report: header, run counters, metric cards and their SVG charts.

Every value from the report goes through :func:`html.escape`; charts are inline SVG drawn here (the
histogram bars carry ``data-metric`` / ``data-bin`` so that report.js can filter the table by them).
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any

from ragmetrics.judge.offline.caveat import WORST_NOTE
from ragmetrics.pipeline.judge_health import JUDGE_HEALTH_MIN
from ragmetrics.pipeline.report import MetricAggregate, Report
from ragmetrics.report._payload import RELEVANCES, VERDICTS

__all__ = ["BINS", "cards", "header", "judges", "samples_section"]

BINS = 10
"""Histogram bins over [0, 1]; the last bin includes 1.0. report.js uses the same formula."""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def judges(report: Report) -> list[tuple[str, bool]]:
    """Each judge used, as (label, heuristic), from the run counters and the records."""
    seen: dict[str, bool] = {}
    for rec in report.records:
        for result in rec.results.values():
            j = result.judge
            if j is not None:
                label = f"offline ({j.model})" if j.provider == "offline" else j.spec
                seen[label] = seen.get(label, False) or j.heuristic or j.provider == "offline"
    for spec in report.run.judges:
        if spec == "offline" and any(k.startswith("offline") for k in seen):
            continue
        seen.setdefault(spec, spec == "offline")
    return list(seen.items())


def _when(stamp: str) -> str:
    try:
        dt = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    zone = " UTC" if dt.utcoffset() is not None and not dt.utcoffset() else ""
    return dt.strftime("%Y-%m-%d %H:%M") + zone


def _money(value: float) -> str:
    if value == 0:
        return "$0.00"
    if value < 0.0001:
        return "< $0.0001"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def _num(value: int) -> str:
    return f"{value:,}"


def header(report: Report, metrics: list[str], heading: str, judges: list[tuple[str, bool]]) -> str:
    run = report.run
    n = len(report.records) or run.samples
    judge_text = ", ".join(label for label, _ in judges) or "unknown"
    meta = [
        f"{_num(n)} sample{'s' if n != 1 else ''}",
        f"{len(metrics)} metric{'s' if len(metrics) != 1 else ''}",
        f"judge{'s' if len(judges) > 1 else ''}: {judge_text}",
        _when(report.created_at),
        f"ragmetrics {report.ragmetrics_version}",
    ]
    out = [
        '<header class="top"><div class="wrap">',
        '<p class="brand" aria-hidden="true">ragmetrics</p>',
        f"<h1>{_e(heading)}</h1>",
        '<p class="meta">' + "<span>" + "</span><span>".join(_e(m) for m in meta) + "</span></p>",
        "</div></header>",
    ]
    for canary in report.canaries:
        if canary.failed:  # the very first banner: a judge that gets known answers wrong judges nothing
            out.append(
                '<div class="wrap"><div class="banner" role="alert" id="canary-banner">'
                f"<strong>The judge {_e(canary.judge)} failed its canaries.</strong> "
                f"Known-answer probes: {_e(canary.describe())}. A judge that gets a plainly supported, "
                "contradicted or unrelated claim wrong does not judge these samples either, so these "
                "scores mean nothing. Check the model name and base URL, and that the model follows "
                "instructions.</div></div>"
            )
    if any(heuristic for _, heuristic in judges):
        out.append(
            '<div class="wrap"><div class="banner" role="note" id="offline-banner">'
            "<strong>Scored by the offline heuristic judge.</strong> "
            "A deterministic lexical judge (no LLM, no API key): its verdicts come from lexical overlap, "
            "number, date and negation checks, not from a language model. <strong>It matches words, not "
            "meaning</strong>: a faithful paraphrase or a reworded fact scores low, so the lowest scores "
            "here may be paraphrases it cannot match. Fine for a smoke test, not a measure of quality. "
            "Run with a model judge (e.g. <code>--judge openai:gpt-4o-mini</code>) for scores that judge "
            "meaning.</div></div>"
        )
    # the run's own gate threshold; with the gate off the banner still warns at the default
    minimum = JUDGE_HEALTH_MIN if report.judge_health_min is None else report.judge_health_min
    for health in report.judge_health.values():
        if health.low(minimum):  # first: no score of such a judge means anything
            out.append(
                '<div class="wrap"><div class="banner alert" role="alert" id="judge-health-banner">'
                f"<strong>The judge {_e(health.judge)} is not reading its inputs.</strong> "
                f"{_e(health.describe())}: its claims and quotes are not in the answers and contexts it "
                "was given, so these scores mean nothing. Check the model name and base URL, and that the "
                "model follows instructions.</div></div>"
            )
    usage = run.usage
    cache = run.cache
    hit_rate = f" ({cache.hit_rate:.0%})" if cache.hit_rate is not None else ""
    stats = [
        ("Samples", _num(n), f"{_num(run.failed)} with errors, {_num(run.skipped)} skipped"),
        (
            "Cost",
            _money(usage.cost_usd),
            "budget reached"
            if run.budget_exhausted
            else (f"budget {_money(run.max_cost_usd)}" if run.max_cost_usd is not None else ""),
        ),
        (
            "Tokens",
            _num(usage.prompt_tokens + usage.completion_tokens),
            f"{_num(usage.prompt_tokens)} in, {_num(usage.completion_tokens)} out",
        ),
        (
            "LLM calls",
            _num(usage.calls),
            f"{_num(usage.succeeded)} succeeded, {_num(usage.failed)} failed, {_num(usage.reasks)} re-asks, "
            f"{_num(usage.retries)} retries"
            + (f", {_num(usage.unmetered)} unmetered" if usage.unmetered else "")
            + f"; {_num(usage.cached_calls)} answered from cache, "
            + f"{_num(usage.shared_calls)} shared",
        ),
        (
            (
                "Cache hits",
                "no LLM calls",
                "every judge here is a heuristic that calls no model: nothing to cache",
            )
            if judges and all(heuristic for _, heuristic in judges) and usage.calls == 0 and not cache.hits
            else (
                "Cache hits",
                _num(cache.hits) + hit_rate,
                f"{_num(cache.misses)} misses, {_num(cache.shared)} shared within the run",
            )
        ),
        (
            "Wall time",
            f"{run.wall_time_s:,.1f} s",
            f"{run.retries} transient retries, {run.throttled} throttled"
            + (f", {run.repeats} repeats" if run.repeats > 1 else ""),
        ),
    ]
    for health in report.judge_health.values():
        rate = f"{health.reading_rate:.0%}" if health.reading_rate is not None else "-"
        stats.append(
            (
                f"Judge health ({health.judge})" if len(report.judge_health) > 1 else "Judge health",
                rate,
                health.describe(),
            )
        )
    for canary in report.canaries:
        verdict = "no verdict" if not canary.answered else ("passed" if canary.passed else "FAILED")
        ok = sum(p.passed for p in canary.probes)
        stats.append(
            (
                f"Canaries ({canary.judge})" if len(report.canaries) > 1 else "Canaries",
                verdict if not canary.answered else f"{verdict} {ok}/{len(canary.probes)}",
                canary.describe(),
            )
        )
    out.append('<div class="wrap"><dl class="stats">')
    for label, value, note in stats:
        out.append(
            f'<div class="stat"><dt>{_e(label)}</dt><dd><span class="v">{_e(value)}</span>'
            + (f'<span class="note">{_e(note)}</span>' if note else "")
            + "</dd></div>"
        )
    out.append("</dl></div>")
    return "\n".join(out)


def cards(report: Report, metrics: list[str], payload: dict[str, Any]) -> str:
    scores_by_metric: list[list[float]] = [[] for _ in metrics]
    verdicts: list[list[int]] = [[0, 0, 0, 0] for _ in metrics]  # the 4th: supported, quote not found
    relevance: list[list[int]] = [[0, 0, 0] for _ in metrics]
    thresholds: list[float | None] = [None for _ in metrics]
    context_counts: list[list[int]] = [[0, 0, 0, 0] for _ in metrics]
    for row in payload["rows"]:
        for m, score in enumerate(row[6]):
            if score is not None:
                scores_by_metric[m].append(score)
        for m, result in enumerate(row[10]):
            if result is None:
                continue
            if thresholds[m] is None:
                thresholds[m] = result[5]
            quotes_count = metrics[m] == "groundedness"  # a claim scores there only with its quote found
            for claim in result[6]:
                if claim[4] == 1 and quotes_count and claim[10] == 0:
                    verdicts[m][3] += 1
                elif claim[4]:
                    verdicts[m][claim[4] - 1] += 1
                if claim[5]:
                    relevance[m][claim[5] - 1] += 1
            _count_contexts(result[12], context_counts[m])
    out = [
        '<section class="wrap" aria-labelledby="metrics-h"><h2 id="metrics-h">Metrics</h2><div class="cards">'
    ]
    for m, name in enumerate(metrics):
        agg = report.aggregates.get(name)
        out.append(
            _card(
                m,
                name,
                agg,
                scores_by_metric[m],
                verdicts[m],
                relevance[m],
                bool(report.records),
                thresholds[m],
                context_counts[m],
            )
        )
    out.append("</div></section>")
    return "\n".join(out)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _card(
    m: int,
    name: str,
    agg: MetricAggregate | None,
    scores: list[float],
    verdicts: list[int],
    relevance: list[int],
    has_records: bool,
    threshold: float | None,
    contexts: list[int],
) -> str:
    mean = agg.mean if agg else (sum(scores) / len(scores) if scores else None)
    out = [f'<article class="card" data-metric="{m}"><h3>{_e(name)}</h3>']
    out.append(f'<p class="mean"><span class="big">{_e(_fmt(mean))}</span><span class="unit">mean</span></p>')
    facts = []
    if agg is not None:
        if agg.ci_low is not None:
            facts.append(("95% CI", f"{agg.ci_low:.3f} – {agg.ci_high:.3f}"))
        facts.append(("Scored", f"{agg.count:,} of {agg.total:,}"))
        if agg.pass_rate is not None:
            mark = f" at ≥ {threshold:g}" if threshold is not None else ""
            facts.append(("Pass rate", f"{agg.pass_rate:.0%}{mark} ({agg.passed:,})"))
        if agg.std is not None:
            facts.append(("Std · min · max", f"{agg.std:.3f} · {agg.min:.3f} · {agg.max:.3f}"))
        if agg.mean_spread is not None:
            facts.append(
                ("Repeat spread", f"mean σ {agg.mean_spread:.3f}, max range {agg.max_spread or 0:.3f}")
            )
    out.append(
        '<dl class="facts">'
        + "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
        + "</dl>"
    )
    if agg is not None and agg.statuses:
        chips = "".join(
            f'<li class="chip{" ok" if s == "ok" else " warn"}"><span>{_e(s)}</span> <b>{c:,}</b></li>'
            for s, c in sorted(agg.statuses.items(), key=lambda kv: (kv[0] != "ok", kv[0]))
        )
        out.append(f'<ul class="chips" aria-label="Samples per status">{chips}</ul>')
    if has_records:
        out.append(_histogram(m, name, scores, mean))
    if sum(verdicts) and verdicts[3]:  # groundedness: supported, but the quote is not in the context
        names = ("supported", "quote_not_found", "contradicted", "not_found")
        out.append(_mix("Claims", "v", names, [verdicts[0], verdicts[3], verdicts[1], verdicts[2]]))
    elif sum(verdicts):
        out.append(_mix("Claims", "v", VERDICTS, verdicts[:3]))
    elif sum(relevance):
        out.append(_mix("Claim relevance", "r", RELEVANCES, relevance))
    out.append(_context_mixes(contexts))
    out.append("</article>")
    return "".join(out)


CONTEXT_RELEVANCE = ("relevant", "not_relevant")
"""The context verdicts counted on a metric card (``details["contexts"]``, see ``_payload.context_view``)."""
CONTEXT_USE = ("used", "unused")


def _count_contexts(view: list[list[Any]] | None, counts: list[int]) -> None:
    """Add one result's context verdicts to ``counts``: relevant, not relevant, used, unused.

    A context is *used* when it supports at least one claim. A metric that judges relevance only
    lists no supports, so it counts no use; one whose relevance *is* use (``context_precision``: relevant
    when it supports a claim) counts it once, as relevance; one that judges no relevance counts use.
    """
    if not view:
        return
    judged = [c for c in view if c[1] >= 0]
    counts[0] += sum(c[1] == 1 for c in judged)
    counts[1] += sum(c[1] == 0 for c in judged)
    if not any(c[2] or c[1] < 0 for c in view):
        return  # relevance only: nothing is known about use
    if all(c[1] == int(bool(c[2])) for c in view):
        return  # relevant exactly when used: the relevance bar says it all
    counts[2] += sum(bool(c[2]) for c in view)
    counts[3] += sum(not c[2] for c in view)


def _context_mixes(counts: list[int]) -> str:
    """The bars of a card's per-context verdicts: relevance to the question, and use by the claims."""
    out = ""
    if counts[0] + counts[1]:
        out += _mix("Contexts by relevance", "c", CONTEXT_RELEVANCE, counts[:2])
    if counts[2] + counts[3]:
        out += _mix("Contexts by use (support a claim)", "c", CONTEXT_USE, counts[2:])
    return out


def _bin(score: float) -> int:
    return min(int(score * BINS), BINS - 1)


def _histogram(m: int, name: str, scores: list[float], mean: float | None) -> str:
    counts = [0] * BINS
    for s in scores:
        counts[_bin(s)] += 1
    width, height, left, bottom, top_pad = 300, 120, 30, 18, 8
    plot_w, plot_h = width - left - 4, height - bottom - top_pad
    base_y = top_pad + plot_h
    peak = max(counts) or 1
    bw = plot_w / BINS
    total = len(scores) or 1
    out = [
        f'<figure class="hist"><svg viewBox="0 0 {width} {height}" class="hist-svg" role="group" '
        f'aria-label="Distribution of {_e(name)} scores; choose a bar to filter the samples">',
        f'<text class="axis" x="{left - 4}" y="{top_pad + 8}" text-anchor="end">{peak:,}</text>',
        f'<text class="axis" x="{left - 4}" y="{base_y}" text-anchor="end">0</text>',
        f'<line class="base" x1="{left}" x2="{left + plot_w}" y1="{base_y}" y2="{base_y}"/>',
    ]
    for b, count in enumerate(counts):
        x = left + b * bw
        closing = "]" if b == BINS - 1 else ")"
        label = f"{b / BINS:.1f}–{(b + 1) / BINS:.1f}{closing}: {count:,} sample{'s' if count != 1 else ''}"
        label += f" ({count / total:.0%})"
        h = 0 if count == 0 else max(2.0, plot_h * count / peak)
        attrs = f' tabindex="0" role="button" aria-label="{_e(name)} {_e(label)}; filter"' if count else ""
        out.append(
            f'<g class="bin{"" if count else " empty"}" data-metric="{m}" data-bin="{b}" data-count="{count}"'
            f"{attrs}><title>{_e(label)}</title>"
            f'<rect class="hit" x="{x:.1f}" y="{top_pad}" width="{bw:.1f}" height="{plot_h}"/>'
            f'<rect class="hist-bar" x="{x + 1:.1f}" y="{base_y - h:.1f}" width="{bw - 2:.1f}" '
            f'height="{h:.1f}"/>'
            "</g>"
        )
    for tick in (0, 0.5, 1):
        x = left + plot_w * tick
        out.append(f'<text class="axis" x="{x:.1f}" y="{height - 4}" text-anchor="middle">{tick:g}</text>')
    if mean is not None:
        x = left + plot_w * mean
        out.append(
            f'<line class="mean-line" x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad - 4}" y2="{base_y}">'
            f"<title>mean {mean:.3f}</title></line>"
        )
    out.append("</svg>")
    out.append(
        f"<figcaption>{len(scores):,} scores · dashed line: mean · choose a bar to filter</figcaption>"
    )
    out.append("</figure>")
    return "".join(out)


def _mix(title: str, prefix: str, names: tuple[str, ...], counts: list[int]) -> str:
    """A stacked bar of claim counts (verdicts or relevance) with its legend."""
    total = sum(counts)
    words = [n.replace("_", " ") for n in names]
    x = 0.0
    rects = []
    for name, word, count in zip(names, words, counts, strict=True):
        w = 300 * count / total
        if w > 0:
            rects.append(
                f'<rect class="{prefix}-{name}" x="{x:.2f}" y="0" width="{w:.2f}" height="10">'
                f"<title>{_e(word)}: {count:,}</title></rect>"
            )
        x += w
    legend = "".join(
        f'<li><i class="sw {prefix}-{name}" aria-hidden="true"></i>{_e(word)} <b>{count:,}</b></li>'
        for name, word, count in zip(names, words, counts, strict=True)
    )
    summary = ", ".join(f"{w} {c}" for w, c in zip(words, counts, strict=True))
    return (
        f'<div class="mix"><p class="mix-h">{_e(title)} ({total:,})</p>'
        f'<svg viewBox="0 0 300 10" preserveAspectRatio="none" class="mix-bar" role="img" '
        f'aria-label="{_e(title)}: {_e(summary)}">{"".join(rects)}</svg>'
        f'<ul class="mix-legend">{legend}</ul></div>'
    )


def samples_section(report: Report, *, heuristic: bool = False) -> str:
    """The samples section: legend and the empty containers report.js fills (table, toolbar, detail).

    With ``heuristic`` (the offline judge scored the run) a note above the table says that its lowest
    scores may be paraphrases the judge cannot match.
    """
    if not report.records:
        return (
            '<section class="wrap" id="samples"><h2>Samples</h2><p class="empty-note">This report kept no '
            "records (a streamed run), so there is no table of samples.</p></section>"
        )
    note = (
        f'<p class="offline-note" role="note" id="offline-samples-note"><strong>{_e(WORST_NOTE[:1].upper())}'
        f"{_e(WORST_NOTE[1:])}</strong> (it matches words, not meaning).</p>"
        if heuristic
        else ""
    )
    return (
        '<section class="wrap samples" id="samples" aria-labelledby="samples-h">'
        '<h2 id="samples-h">Samples</h2>' + note + '<ul class="legend" aria-label="Highlight colours">'
        '<li><mark class="hl v-supported">supported</mark> the contexts back the claim</li>'
        '<li><mark class="hl v-contradicted">contradicted</mark> the contexts say otherwise</li>'
        '<li><mark class="hl v-not_found">not found</mark> the contexts do not mention it</li>'
        '<li><mark class="hl v-mixed">mixed</mark> a context (or the same quote) that supports one claim and '
        "contradicts another</li>"
        '<li><mark class="hl r-off_topic">off topic</mark> relevancy: the claim does not bear on the '
        "question</li>"
        "</ul>"
        '<div id="toolbar" class="toolbar"></div>'
        '<div class="split"><div id="table-pane" class="table-pane"></div>'
        '<aside id="detail" class="detail" aria-label="Sample detail" tabindex="-1"></aside></div>'
        '<noscript><p class="empty-note">The table of samples and their claims needs JavaScript.</p>'
        "</noscript>"
        "</section>"
    )
